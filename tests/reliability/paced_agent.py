"""A stand-in for ``claude -p`` that takes a moment per iteration, for kill -9 tests.

Prints its init line, a few assistant lines at a pace, and its ``result`` line (cost $0.1,
1000 input and 100 output tokens); then, before exiting, it lingers ``PACED_LINGER_S`` seconds
(default 0.2), a window in which a runner killed has the result but has not recorded it. With
a file ``linger`` in its working directory it writes ``result-printed`` there after its result
line and lingers 30 s instead. Stdlib only; arguments are ignored.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

COST_USD = 0.1


def line(obj: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    sys.stdin.read()
    n = os.environ.get("RALPHCTL_ITERATION", "?")
    line({"type": "system", "subtype": "init", "session_id": f"paced-{n}", "model": "paced"})
    for step in range(3):
        time.sleep(0.05)
        message = {"id": f"m-{n}", "content": [{"type": "text", "text": f"step {step}"}]}
        line({"type": "assistant", "message": message, "parent_tool_use_id": None})
    line(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": f"iteration {n} done",
            "session_id": f"paced-{n}",
            "total_cost_usd": COST_USD,
            "usage": {"input_tokens": 1000, "output_tokens": 100},
        }
    )
    if Path("linger").exists():
        Path("result-printed").write_text(n)
        time.sleep(30)
    time.sleep(float(os.environ.get("PACED_LINGER_S", "0.2")))


if __name__ == "__main__":
    main()
