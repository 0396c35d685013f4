#!/usr/bin/env python3
"""A stand-in for ``codex exec --json``, for the benchmarks: prints one stream recorded from
the real Codex CLI 0.169.0 (tests/agents/cassettes/codex/apply_patch.jsonl: an agent message,
an ``apply_patch`` file change, a closing message, ``turn.completed`` with the usage), byte for
byte as the CLI printed it, and exits 0. Standard library only, so that it starts as fast as
Python can; it ignores its arguments and drains stdin (the prompt) unread.

    RALPHCTL_CODEX_BIN=bench/fake_agents/codex.py ralphctl run --agent codex --task ...
"""

from __future__ import annotations

import json
import sys

EVENTS = [
    {"type": "thread.started", "thread_id": "01a209dc-4d14-7493-bf59-d138f8ba12fc"},
    {"type": "turn.started"},
    {
        "type": "item.completed",
        "item": {"id": "item_0", "type": "agent_message", "text": "I will add the notes."},
    },
    {
        "type": "item.started",
        "item": {
            "id": "item_1",
            "type": "file_change",
            "changes": [{"path": "/work/project/notes.txt", "kind": "add"}],
            "status": "in_progress",
        },
    },
    {
        "type": "item.completed",
        "item": {
            "id": "item_1",
            "type": "file_change",
            "changes": [{"path": "/work/project/notes.txt", "kind": "add"}],
            "status": "completed",
        },
    },
    {
        "type": "item.completed",
        "item": {"id": "item_2", "type": "agent_message", "text": "Added notes.txt."},
    },
    {
        "type": "turn.completed",
        "usage": {
            "input_tokens": 3000,
            "cached_input_tokens": 300,
            "cache_write_input_tokens": 0,
            "output_tokens": 100,
            "reasoning_output_tokens": 0,
        },
    },
]
STREAM = b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in EVENTS)


def main() -> int:
    if not sys.stdin.isatty():
        sys.stdin.buffer.read()
    sys.stdout.buffer.write(STREAM)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
