#!/usr/bin/env python3
"""A stand-in for ``amp --execute --stream-json``, for the benchmarks: appends a line to
``progress.md`` in the work dir (so the loop makes progress as a working agent would), prints
one fixed stream in the shapes of the Amp CLI 0.0.1790142911-g7618fb (those of
tests/agents/cassettes/amp/edit_and_test, built from the CLI's event writer, never captured
from a model run: Amp's model calls go through its vendor's server) and exits 0. It never
claims completion. Standard library only, so that it starts as fast as Python can; it ignores
its arguments and drains stdin (the prompt).

    RALPHCTL_AMP_BIN=bench/fake_agents/amp.py ralphctl run --agent amp --task ...
"""

from __future__ import annotations

import json
import os
import sys

THREAD = "T-5f0c2a7e-3b1d-4c8e-9a47-0e6d2b9c1f3a"
FINAL = "Noted the progress in progress.md; the test passes."


def _assistant(
    content: list[dict[str, object]], tokens: tuple[int, int, int], stop: str
) -> dict[str, object]:
    fresh, cached, output = tokens
    usage = {
        "input_tokens": fresh,
        "cache_read_input_tokens": cached,
        "output_tokens": output,
        "service_tier": "standard",
    }
    message = {"type": "message", "role": "assistant", "content": content}
    return {
        "type": "assistant",
        "message": {**message, "stop_reason": stop, "usage": usage},
        "parent_tool_use_id": None,
        "session_id": THREAD,
    }


def _tool_result(tool_use_id: str, content: str) -> dict[str, object]:
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    return {
        "type": "user",
        "message": {"role": "user", "content": [{**block, "is_error": False}]},
        "parent_tool_use_id": None,
        "session_id": THREAD,
    }


EDIT = {"path": "progress.md", "old_str": "", "new_str": "iteration n"}
EVENTS = [
    {
        "type": "system",
        "subtype": "init",
        "cwd": ".",
        "session_id": THREAD,
        "tools": ["Bash", "Read", "edit_file", "create_file"],
        "mcp_servers": [],
        "agent_mode": "medium",
    },
    _assistant(
        [
            {"type": "text", "text": "I will note my progress."},
            {"type": "tool_use", "id": "toolu_01", "name": "edit_file", "input": EDIT},
        ],
        (2100, 800, 120),
        "tool_use",
    ),
    _tool_result("toolu_01", "Edited progress.md"),
    _assistant(
        [{"type": "tool_use", "id": "toolu_02", "name": "Bash", "input": {"cmd": "pytest -q"}}],
        (2300, 2900, 30),
        "tool_use",
    ),
    _tool_result("toolu_02", "1 passed in 0.02s"),
    _assistant([{"type": "text", "text": FINAL}], (2500, 3100, 25), "end_turn"),
    {
        "type": "result",
        "subtype": "success",
        "duration_ms": 4210,
        "is_error": False,
        "num_turns": 3,
        "result": FINAL,
        "session_id": THREAD,
    },
]
STREAM = b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in EVENTS)


def main() -> int:
    if not sys.stdin.isatty():
        sys.stdin.buffer.read()
    with open("progress.md", "a") as progress:  # the run's one edit, in the work dir
        progress.write(f"iteration {os.environ.get('RALPHCTL_ITERATION', '?')}\n")
    sys.stdout.buffer.write(STREAM)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
