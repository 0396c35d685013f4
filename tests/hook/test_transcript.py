"""The transcript fallback (CLIs before 2.1.47 send no last_assistant_message)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ralphctl.hook import transcript
from ralphctl.hook.transcript import last_assistant_text, may_have_armed


def line(kind: str, message_id: str, *blocks: dict[str, Any], sidechain: bool = False) -> str:
    record = {
        "type": kind,
        "isSidechain": sidechain,
        "message": {"id": message_id, "role": kind, "content": list(blocks)},
    }
    return json.dumps(record)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


TOOL = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}


def write(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_the_last_messages_text_blocks_one_per_line_are_joined(tmp_path):
    path = write(
        tmp_path,
        line("assistant", "msg_1", text("earlier")),
        line("user", "u1", {"type": "tool_result", "content": "<promise>X</promise>"}),
        line("assistant", "msg_2", {"type": "thinking", "thinking": "hmm"}),
        line("assistant", "msg_2", text("All done.")),
        line("assistant", "msg_2", text("<promise>X</promise>")),
    )
    assert last_assistant_text(path) == "All done.\n<promise>X</promise>"


def test_repeated_lines_of_one_message_are_deduplicated(tmp_path):
    path = write(
        tmp_path,
        line("assistant", "msg_2", text("All done.")),
        line("assistant", "msg_2", text("All done."), text("<promise>X</promise>")),
    )
    assert last_assistant_text(path) == "All done.\n<promise>X</promise>"


def test_a_tool_only_last_message_has_no_text(tmp_path):
    path = write(tmp_path, line("assistant", "msg_1", text("hi")), line("assistant", "msg_2", TOOL))
    assert last_assistant_text(path) == ""


def test_subagent_lines_and_garbage_are_ignored(tmp_path):
    path = write(
        tmp_path,
        line("assistant", "msg_1", text("mine")),
        line("assistant", "msg_9", text("the subagent's"), sidechain=True),
        '{"type": "assistant", broken',
        "",
    )
    assert last_assistant_text(path) == "mine"


def test_only_the_tail_is_read_and_a_cut_first_line_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(transcript, "TAIL_BYTES", 200)
    path = write(
        tmp_path,
        line("assistant", "msg_1", text("x" * 300)),
        line("assistant", "msg_2", text("last")),
    )
    assert last_assistant_text(path) == "last"


def test_a_missing_transcript_has_no_text(tmp_path):
    assert last_assistant_text(str(tmp_path / "missing.jsonl")) == ""
    assert last_assistant_text(None) == ""


ARMED_AT = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def stamped(moment: str, content: str = "work") -> str:
    return json.dumps({"type": "user", "timestamp": moment, "message": {"content": content}})


def test_the_arming_session_is_recognised_by_its_token(tmp_path):
    path = write(tmp_path, stamped("2027-01-15T09:00:00.000Z", "armed; token 0123abcd"))
    assert may_have_armed(path, "0123abcd", ARMED_AT)


def test_a_transcript_active_after_the_arming_without_the_token_is_another_session(tmp_path):
    path = write(tmp_path, stamped("2027-01-15T08:00:05.500Z"))
    assert not may_have_armed(path, "0123abcd", ARMED_AT)


def test_a_transcript_that_has_not_caught_up_with_the_arming_may_be_its_session(tmp_path):
    """At the first Stop the arming tool's output is often not written yet."""
    path = write(tmp_path, stamped("2027-01-15T07:59:59.000Z"), stamped("2027-01-15T08:00:01.9Z"))
    assert may_have_armed(path, "0123abcd", ARMED_AT)


def test_an_unreadable_or_timeless_transcript_cannot_tell_sessions_apart(tmp_path):
    assert may_have_armed(str(tmp_path / "missing.jsonl"), "0123abcd", ARMED_AT)
    assert may_have_armed(write(tmp_path, "not json"), "0123abcd", ARMED_AT)


#: Gemini CLI 0.61.0's ``chats/session-*.jsonl`` as the real CLI wrote it (against the mock
#: API, ids and the session context shortened): metadata, ``$set`` updates, then messages.
GEMINI_SESSION = [
    '{"sessionId":"da5e536b-1689-4ad8-9fee-8a228130258b","projectHash":"d027","startTime":'
    '"2026-11-28T12:29:42.032Z","lastUpdated":"2026-11-28T12:29:42.032Z","kind":"main"}',
    '{"$set":{"messages":[{"id":"d049","timestamp":"2026-11-28T12:29:42.033Z","type":"user",'
    '"content":[{"text":"<session_context>...</session_context>"}]}],'
    '"lastUpdated":"2026-11-28T12:29:42.033Z"}}',
    '{"id":"9b56","timestamp":"2026-11-28T12:29:42.089Z","type":"user",'
    '"content":[{"text":"Say one."}]}',
    '{"$set":{"lastUpdated":"2026-11-28T12:29:42.089Z"}}',
    '{"id":"6b50","timestamp":"2026-11-28T12:29:42.202Z","type":"gemini",'
    '"content":"First reply.","thoughts":[],"tokens":{"input":100,"output":10,"cached":0,'
    '"thoughts":0,"tool":0,"total":110},"model":"gemini-3.8-flash"}',
    '{"$set":{"lastUpdated":"2026-11-28T12:29:42.202Z"}}',
]


def gemini(message_id: str, content: object) -> str:
    return json.dumps({"id": message_id, "type": "gemini", "content": content, "model": "g"})


def test_a_gemini_session_file_is_read_line_by_line(tmp_path):
    assert last_assistant_text(write(tmp_path, *GEMINI_SESSION)) == "First reply."


def test_the_last_gemini_message_is_the_final_text_not_every_reply(tmp_path):
    path = write(
        tmp_path,
        *GEMINI_SESSION,
        '{"id":"u2","type":"user","content":[{"text":"Go on."}]}',
        gemini("g2", "Second reply."),
        gemini("g2", "Second reply."),  # appended again with its tokens
    )
    assert last_assistant_text(path) == "Second reply."


def test_a_gemini_message_of_parts_keeps_its_text_but_not_its_thoughts(tmp_path):
    parts = [{"text": "thinking...", "thought": True}, {"text": "Done."}, {"functionCall": {}}]
    assert last_assistant_text(write(tmp_path, gemini("g1", parts))) == "Done."
