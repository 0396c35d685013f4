#!/usr/bin/env python3
"""A stand-in for ``cursor-agent -p --output-format stream-json``, for the benchmarks: appends
a line to ``progress.md`` in the work dir (so the loop makes progress as a working agent
would), prints one fixed stream in Cursor's documented format (the shape of
tests/agents/cassettes/cursor/read_write, without a completion marker; Cursor's CLI is not on a
package registry, so the stream was never captured from it) and exits 0. Standard library
only, so that it starts as fast as Python can; it ignores its arguments and drains stdin (the
prompt).

    RALPHCTL_CURSOR_BIN=bench/fake_agents/cursor.py ralphctl run --agent cursor --task ...
"""

from __future__ import annotations

import json
import os
import sys

SESSION = "4b7e1f0a-92c3-4d5e-8f61-2a9b0c3d4e5f"
MESSAGES = ("Reading README.md first.", "Now noting my progress.", "progress.md is updated.")
READ = {"path": "README.md"}
WRITE = {"path": "progress.md", "fileText": "iteration n\n", "toolCallId": "call_w1"}


def _said(text: str) -> dict[str, object]:
    content = [{"type": "text", "text": text}]
    return {
        "type": "assistant",
        "message": {"role": "assistant", "content": content},
        "session_id": SESSION,
    }


def _tool(subtype: str, call_id: str, key: str, body: dict[str, object]) -> dict[str, object]:
    return {
        "type": "tool_call",
        "subtype": subtype,
        "call_id": call_id,
        "tool_call": {key: body},
        "session_id": SESSION,
    }


READ_DONE = {"content": "# ralphctl\n", "isEmpty": False, "totalLines": 1, "totalChars": 11}
WRITE_DONE = {"path": "progress.md", "linesCreated": 1, "fileSize": 12}
EVENTS = [
    {
        "type": "system",
        "subtype": "init",
        "apiKeySource": "env",
        "cwd": ".",
        "session_id": SESSION,
        "model": "GPT-5",
        "permissionMode": "default",
    },
    _said(MESSAGES[0]),
    _tool("started", "call_r1", "readToolCall", {"args": READ}),
    _tool("completed", "call_r1", "readToolCall", {"args": READ, "result": {"success": READ_DONE}}),
    _said(MESSAGES[1]),
    _tool("started", "call_w1", "writeToolCall", {"args": WRITE}),
    _tool(
        "completed", "call_w1", "writeToolCall", {"args": WRITE, "result": {"success": WRITE_DONE}}
    ),
    _said(MESSAGES[2]),
    {
        "type": "result",
        "subtype": "success",
        "duration_ms": 6120,
        "duration_api_ms": 6120,
        "is_error": False,
        "result": "".join(MESSAGES),
        "session_id": SESSION,
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
