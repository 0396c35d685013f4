"""The Amp parser keeps its memory bounded over a long run (that no input makes it raise
is tested for every agent in tests/agents/test_parsers_robustness.py)."""

from __future__ import annotations

import json
from typing import Any

from ralphctl.agents.amp_stream import AmpStreamParser
from tests.agents.streams import exited


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def test_memory_stays_bounded_over_a_long_run() -> None:
    parser = AmpStreamParser()
    for n in range(5_000):
        parser.feed(
            line(
                {
                    "type": "assistant",
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": f"t{n}", "name": "edit_file"}],
                        "usage": {"input_tokens": 1, "output_tokens": 1},
                    },
                    "parent_tool_use_id": None,
                }
            )
        )

    result = parser.finish(exited(0))

    assert len(result.tool_uses) == 200
    assert result.tokens.input == 5_000
