"""The Gemini CLI parser keeps its memory bounded over a long run (that no input makes it raise
is tested for every agent in tests/agents/test_parsers_robustness.py)."""

from __future__ import annotations

from ralphctl.agents.gemini_stream import GeminiStreamParser
from tests.agents.gemini.streams import line
from tests.agents.streams import exited


def test_memory_stays_bounded_over_a_long_run() -> None:
    parser = GeminiStreamParser()
    for n in range(5_000):
        tool_id = f"t{n}"
        parser.feed(line({"type": "tool_use", "tool_name": "write_file", "tool_id": tool_id}))
        denied = {"type": "policy_violation", "message": "no"}
        parser.feed(
            line({"type": "tool_result", "tool_id": tool_id, "status": "error", "error": denied})
        )
        parser.feed(line({"type": "message", "role": "assistant", "content": "x" * 100}))

    result = parser.finish(exited(None))

    assert len(result.tool_uses) == 200
    assert len(result.permission_denials) == 100
    assert result.final_text == "x" * 100
