#!/usr/bin/env python3
"""A stand-in for ``opencode run --format json``, for the benchmarks: prints one stream recorded
from the real OpenCode CLI 1.18.33 (tests/agents/cassettes/opencode/write_file.jsonl: a step
with a text and a ``write`` tool call, a closing step with the final text, each ``step_finish``
with its tokens and cost), byte for byte as the CLI printed it, and exits 0. Standard library
only, so that it starts as fast as Python can; it ignores its arguments and drains stdin (the
prompt) unread.

    RALPHCTL_OPENCODE_BIN=bench/fake_agents/opencode.py ralphctl run --agent opencode --task ...
"""

from __future__ import annotations

import json
import sys

EVENTS = [
    {
        "type": "step_start",
        "timestamp": 1795462512357,
        "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
        "part": {
            "id": "prt_209e7be09001iGphV6ljdKJLLt",
            "messageID": "msg_209e7b3790010K754GygoZu7yC",
            "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
            "type": "step-start",
        },
    },
    {
        "type": "text",
        "timestamp": 1795462512358,
        "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
        "part": {
            "id": "prt_209e7be0f001x7MV3v5j7kiNkb",
            "messageID": "msg_209e7b3790010K754GygoZu7yC",
            "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
            "type": "text",
            "text": "I will write the notes.",
            "time": {"start": 1795462512143, "end": 1795462512188},
        },
    },
    {
        "type": "tool_use",
        "timestamp": 1795462512358,
        "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
        "part": {
            "type": "tool",
            "tool": "write",
            "callID": "call_mock_000",
            "state": {
                "status": "completed",
                "input": {"filePath": "notes.txt", "content": "hello from the mock\n"},
                "output": "Wrote file successfully.",
                "metadata": {
                    "diagnostics": {},
                    "filepath": "/tmp/tmpf42ru9hr/write_file/notes.txt",
                    "exists": False,
                    "truncated": False,
                },
                "title": "tmp/tmpf42ru9hr/write_file/notes.txt",
                "time": {"start": 1795462512185, "end": 1795462512255},
            },
            "id": "prt_209e7be14001oJqn4hWeN5Nx3I",
            "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
            "messageID": "msg_209e7b3790010K754GygoZu7yC",
        },
    },
    {
        "type": "step_finish",
        "timestamp": 1795462512358,
        "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
        "part": {
            "id": "prt_209e7be93001qNoKTfrbrEvSZE",
            "reason": "tool-calls",
            "messageID": "msg_209e7b3790010K754GygoZu7yC",
            "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
            "type": "step-finish",
            "tokens": {
                "total": 1580,
                "input": 1200,
                "output": 80,
                "reasoning": 0,
                "cache": {"write": 0, "read": 300},
            },
            "cost": 0.00319,
        },
    },
    {
        "type": "step_start",
        "timestamp": 1795462512540,
        "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
        "part": {
            "id": "prt_209e7bf3c001Q25fvUEdDY1M2n",
            "messageID": "msg_209e7becb001VxGIbHEqPBndhM",
            "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
            "type": "step-start",
        },
    },
    {
        "type": "text",
        "timestamp": 1795462512540,
        "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
        "part": {
            "id": "prt_209e7bf40001h3wPP3Ajk1Fgxs",
            "messageID": "msg_209e7becb001VxGIbHEqPBndhM",
            "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
            "type": "text",
            "text": "Wrote notes.txt.",
            "time": {"start": 1795462512448, "end": 1795462512458},
        },
    },
    {
        "type": "step_finish",
        "timestamp": 1795462512540,
        "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
        "part": {
            "id": "prt_209e7bf51001Xv6OcHl6TQz205",
            "reason": "stop",
            "messageID": "msg_209e7becb001VxGIbHEqPBndhM",
            "sessionID": "ses_df6185c8fffehJUei2KUL09pL9",
            "type": "step-finish",
            "tokens": {
                "total": 1520,
                "input": 1500,
                "output": 20,
                "reasoning": 0,
                "cache": {"write": 0, "read": 0},
            },
            "cost": 0.00316,
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
