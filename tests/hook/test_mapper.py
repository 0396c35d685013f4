"""The neutral intent, in each agent's hook output format."""

from __future__ import annotations

import json

import pytest

from ralphctl.domain.defaults import CONTINUE_MESSAGE
from ralphctl.hook.mapper import FORMATS, render
from ralphctl.hook.stop import Allow, StopBlock


def test_claude_and_codex_share_the_block_form():
    for fmt in ("claude", "codex"):
        line = render(StopBlock("Go on.", "Ralph iteration 2/5"), fmt)
        assert line is not None
        assert json.loads(line) == {
            "decision": "block",
            "reason": "Go on.",
            "systemMessage": "Ralph iteration 2/5",
        }


def test_gemini_denies_instead_of_blocking():
    line = render(StopBlock("Go on."), "gemini")
    assert line is not None
    assert json.loads(line) == {"decision": "deny", "reason": "Go on."}


def test_copilot_blocks_without_a_system_message():
    line = render(StopBlock("Go on.", "Ralph iteration 2/5"), "copilot")
    assert line is not None
    assert json.loads(line) == {"decision": "block", "reason": "Go on."}


def test_cursor_continues_with_a_followup_message():
    line = render(StopBlock("Go on.", "Ralph iteration 2/5"), "cursor")
    assert line is not None
    assert json.loads(line) == {"followup_message": "Go on."}


def _next_instruction(line: str) -> str:
    document = json.loads(line)
    return str(document.get("reason", document.get("followup_message")))


def test_a_block_reason_is_never_empty():
    for fmt in FORMATS:
        line = render(StopBlock("  \n"), fmt)
        assert line is not None
        assert _next_instruction(line) == CONTINUE_MESSAGE


def test_an_allow_prints_nothing_or_only_a_system_message():
    for fmt in FORMATS:
        assert render(Allow(), fmt) is None
        assert render(None, fmt) is None
    for fmt in ("claude", "codex", "gemini"):
        assert json.loads(render(Allow("done"), fmt) or "") == {"systemMessage": "done"}
    for fmt in ("copilot", "cursor"):  # no place for a message to the user: nothing
        assert render(Allow("done"), fmt) is None


def test_output_is_one_ascii_line():
    line = render(StopBlock("línea 1\nlínea 2 🚀"), "claude")
    assert line is not None
    assert line.isascii()
    assert "\n" not in line


def test_an_unknown_format_is_an_error():
    with pytest.raises(ValueError, match="unknown hook output format"):
        render(Allow(), "xml")
