#!/usr/bin/env python3
"""A stand-in for ``gemini --output-format stream-json``, for the benchmarks: prints one stream
recorded from the real Gemini CLI 0.61.0 (tests/agents/cassettes/gemini/write_file.jsonl: the
init line, the prompt echo, a text, a ``write_file`` tool use and its result, a closing text,
the ``result`` line with the stats), byte for byte as the CLI printed it, and exits 0. Standard
library only, so that it starts as fast as Python can; it ignores its arguments and drains
stdin (the prompt) unread.

    RALPHCTL_GEMINI_BIN=bench/fake_agents/gemini.py ralphctl run --agent gemini --task ...
"""

from __future__ import annotations

import json
import sys

EVENTS = [
    {
        "type": "init",
        "timestamp": "2026-11-23T19:24:10.898Z",
        "session_id": "5e55a1d0-0000-4000-8000-00000000a11e",
        "model": "auto",
    },
    {
        "type": "message",
        "timestamp": "2026-11-23T19:24:10.910Z",
        "role": "user",
        "content": "Do the task in TASK.md.",
    },
    {
        "type": "message",
        "timestamp": "2026-11-23T19:24:11.279Z",
        "role": "assistant",
        "content": "I will write the notes.",
        "delta": True,
    },
    {
        "type": "tool_use",
        "timestamp": "2026-11-23T19:24:11.632Z",
        "tool_name": "write_file",
        "tool_id": "write_file__write_file_1795461851280_0",
        "parameters": {"file_path": "notes.txt", "content": "hello from the mock\n"},
    },
    {
        "type": "tool_result",
        "timestamp": "2026-11-23T19:24:12.122Z",
        "tool_id": "write_file__write_file_1795461851280_0",
        "status": "success",
    },
    {
        "type": "message",
        "timestamp": "2026-11-23T19:24:12.220Z",
        "role": "assistant",
        "content": "Wrote notes.txt.",
        "delta": True,
    },
    {
        "type": "result",
        "timestamp": "2026-11-23T19:24:12.232Z",
        "status": "success",
        "stats": {
            "total_tokens": 3100,
            "input_tokens": 3000,
            "output_tokens": 100,
            "cached": 300,
            "input": 2700,
            "duration_ms": 1335,
            "tool_calls": 1,
            "models": {
                "gemini-3.5-flash-lite": {
                    "total_tokens": 0,
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "cached": 0,
                    "input": 0,
                },
                "gemini-3.8-flash": {
                    "total_tokens": 3100,
                    "input_tokens": 3000,
                    "output_tokens": 100,
                    "cached": 300,
                    "input": 2700,
                },
            },
        },
    },
]
STREAM = b"".join(
    json.dumps(e, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for e in EVENTS
)


def main() -> int:
    if not sys.stdin.isatty():
        sys.stdin.buffer.read()
    sys.stdout.buffer.write(STREAM)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
