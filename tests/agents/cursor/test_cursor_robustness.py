"""The Cursor parser keeps its memory bounded over a long run (that no input makes it raise
is tested for every agent in tests/agents/test_parsers_robustness.py)."""

from __future__ import annotations

import json
from typing import Any

from ralphctl.agents.cursor_stream import CursorStreamParser
from tests.agents.streams import exited


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def test_memory_stays_bounded_over_a_long_run() -> None:
    parser = CursorStreamParser()
    for n in range(5_000):
        call = {"shellToolCall": {"args": {"command": "rm -rf /"}, "result": {"rejected": {}}}}
        for subtype in ("started", "completed"):
            parser.feed(
                line(
                    {"type": "tool_call", "subtype": subtype, "call_id": f"c{n}", "tool_call": call}
                )
            )
        parser.feed(
            line(
                {"type": "assistant", "message": {"content": [{"type": "text", "text": "x" * 100}]}}
            )
        )

    result = parser.finish(exited(0))

    assert len(result.tool_uses) == 200
    assert len(result.permission_denials) == 100
    assert len(result.final_text) == 100  # the text after the last tool call only
