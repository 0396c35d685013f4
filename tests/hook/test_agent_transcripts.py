"""The final text and the arming token, read from each agent's transcript."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ralphctl.hook.transcript import last_assistant_text, may_have_armed
from tests.hook.agent_inputs import copilot_transcript, cursor_transcript


def jsonl(path: Path, *records: dict[str, Any]) -> str:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return str(path)


def test_copilot_final_text_is_its_last_assistant_message(tmp_path):
    path = copilot_transcript(tmp_path / "events.jsonl", "First.", "Last words.")
    assert last_assistant_text(str(path)) == "Last words."


def test_a_copilot_sub_agents_message_is_not_the_final_text(tmp_path):
    path = copilot_transcript(tmp_path / "events.jsonl", "Main agent done.")
    sub = {
        "type": "assistant.message",
        "data": {"messageId": "s", "content": "Sub-agent.", "parentToolCallId": "call-9"},
    }
    with path.open("a") as file:
        file.write(json.dumps(sub) + "\n")
    assert last_assistant_text(str(path)) == "Main agent done."


def test_a_copilot_turn_ending_in_tool_requests_has_no_final_text(tmp_path):
    path = copilot_transcript(tmp_path / "events.jsonl", "Working.", "")
    assert last_assistant_text(str(path)) == ""


def test_cursor_final_text_is_its_last_assistant_line(tmp_path):
    path = cursor_transcript(tmp_path / "t.jsonl", "One.", "Two.")
    assert last_assistant_text(str(path)) == "Two."


def test_codex_rollout_final_text_is_its_last_assistant_output_text(tmp_path):
    path = jsonl(
        tmp_path / "rollout.jsonl",
        {"timestamp": "2026-11-23T22:00:00.000Z", "type": "session_meta", "payload": {}},
        {
            "timestamp": "2026-11-23T22:00:01.000Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Codex says done."}],
            },
        },
        {
            "timestamp": "2026-11-23T22:00:02.000Z",
            "type": "response_item",
            "payload": {"type": "function_call", "name": "exec_command", "arguments": "{}"},
        },
    )
    assert last_assistant_text(path) == "Codex says done."


def test_a_transcript_without_line_times_is_dated_by_its_modification(tmp_path):
    """Gemini CLI's transcript is one JSON document: its mtime says when it last changed."""
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"messages": [{"type": "gemini", "content": "Other work."}]}))
    armed_at = time.time()
    assert may_have_armed(str(path), "tok3n", armed_at + 10)  # written before the arming
    os.utime(path, (armed_at + 60, armed_at + 60))
    assert not may_have_armed(str(path), "tok3n", armed_at)  # later activity, no token


def test_without_a_transcript_the_final_text_must_hold_the_token():
    assert may_have_armed(None, "tok3n", time.time(), "Armed: tok3n.")
    assert not may_have_armed(None, "tok3n", time.time(), "Other work.")
    assert may_have_armed(None, "tok3n", time.time(), None)  # no evidence at all


def test_an_unreadable_transcript_still_counts_as_not_caught_up(tmp_path):
    missing = str(tmp_path / "gone.jsonl")
    assert may_have_armed(missing, "tok3n", time.time(), "Other work.")
