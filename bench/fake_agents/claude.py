"""A stand-in for ``claude -p --output-format stream-json --verbose``, for the benchmarks.

Standard library only, so that it starts as fast as Python can. It reads the prompt from
stdin, makes one edit in the work dir (a line appended to ``progress.md``, so the loop makes
progress as a working agent would) and prints the stream a real one-turn session prints:
``system/init``, an assistant text, a ``Write`` tool use and its result, a closing text and
the ``result`` line with the run's usage and cost. It never claims completion.

    RALPHCTL_CLAUDE_BIN=bench/fake_agents/claude.py ralphctl run --task ...   (bench/overhead.py)
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

MODEL = "claude-sonnet-4-5"
USAGE = {
    "input_tokens": 1200,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 8000,
    "output_tokens": 40,
}


def session_id(argv: list[str]) -> str:
    """The ``--session-id`` given on the command line, else a new one."""
    for flag, value in itertools.pairwise(argv):
        if flag == "--session-id":
            return value
    return str(uuid.uuid4())


def stream(session: str, workdir: Path) -> list[dict[str, Any]]:
    """The lines of one turn that writes ``progress.md``."""
    iteration = os.environ.get("RALPHCTL_ITERATION", "?")
    target = str(workdir / "progress.md")
    common = {"session_id": session, "parent_tool_use_id": None}

    def assistant(message_id: str, *content: dict[str, Any]) -> dict[str, Any]:
        message = {"id": message_id, "role": "assistant", "model": MODEL, "usage": USAGE}
        return {"type": "assistant", "message": {**message, "content": list(content)}, **common}

    write = {"file_path": target, "content": f"iteration {iteration}\n"}
    return [
        {"type": "system", "subtype": "init", "cwd": str(workdir), "model": MODEL, **common},
        assistant("msg_1", {"type": "text", "text": "I will note my progress."}),
        assistant("msg_1", {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": write}),
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
            },
            **common,
        },
        assistant("msg_2", {"type": "text", "text": f"Progress noted (iteration {iteration})."}),
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "num_turns": 2,
            "result": f"Progress noted (iteration {iteration}).",
            "total_cost_usd": 0.0042,
            "usage": USAGE,
            "modelUsage": {MODEL: {"inputTokens": 1200, "outputTokens": 40, "costUSD": 0.0042}},
            "permission_denials": [],
            "session_id": session,
        },
    ]


def main() -> None:
    sys.stdin.read()
    workdir = Path.cwd()
    with (workdir / "progress.md").open("a") as progress:
        progress.write(f"iteration {os.environ.get('RALPHCTL_ITERATION', '?')}\n")
    out = "".join(json.dumps(line) + "\n" for line in stream(session_id(sys.argv), workdir))
    sys.stdout.write(out)


if __name__ == "__main__":
    main()
