"""Each agent's recorded Stop input reads as the same neutral event."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralphctl.hook.stopinput import parse
from tests.hook.agent_inputs import AGENTS, SENDS_FINAL_TEXT, agent_stop
from tests.hook.helpers import SESSION

PROJECT = Path("/work/project")


@pytest.mark.parametrize("agent", AGENTS)
def test_every_agent_names_its_session_project_and_the_hook_guard(agent):
    first = parse(agent_stop(agent, PROJECT), agent)
    again = parse(agent_stop(agent, PROJECT, again=True), agent)
    assert (first.session_id, first.cwd) == (SESSION, str(PROJECT))
    assert (first.stop_hook_active, again.stop_hook_active) == (False, True)
    assert first.completed_turn


@pytest.mark.parametrize("agent", SENDS_FINAL_TEXT)
def test_claude_codex_gemini_and_opencode_send_the_final_text(agent):
    assert parse(agent_stop(agent, PROJECT, text="All done."), agent).final_text == "All done."


@pytest.mark.parametrize("agent", ["copilot", "cursor"])
def test_copilot_and_cursor_send_no_final_text(agent):
    assert parse(agent_stop(agent, PROJECT, text="All done."), agent).final_text is None


def test_codex_may_send_null_text_and_transcript():
    event = parse(agent_stop("codex", PROJECT, text=None), "codex")
    assert (event.final_text, event.transcript_path) == (None, None)


def test_the_event_names_are_each_agents_own():
    names = {agent: parse(agent_stop(agent, PROJECT), agent).hook_event_name for agent in AGENTS}
    assert names == {
        "claude": "Stop",
        "codex": "Stop",
        "gemini": "AfterAgent",
        "copilot": None,  # Copilot 1.0.102 sends no event name
        "cursor": "stop",
        "opencode": "session.idle",  # ralphctl's plugin names the event it answers
    }


def test_copilot_names_its_transcript_in_camel_case():
    raw = agent_stop("copilot", PROJECT, transcriptPath="/h/.copilot/session-state/s/events.jsonl")
    assert parse(raw, "copilot").transcript_path == "/h/.copilot/session-state/s/events.jsonl"


def test_cursor_reports_how_the_turn_ended_and_its_follow_up_count():
    event = parse(agent_stop("cursor", PROJECT, status="aborted", loop_count=3), "cursor")
    assert (event.status, event.loop_count, event.completed_turn) == ("aborted", 3, False)
    assert event.stop_hook_active  # a stop after a follow-up is a stop after our block
    assert not parse(agent_stop("cursor", PROJECT, status="error"), "cursor").completed_turn


def test_opencode_reports_a_failed_or_aborted_turn_from_its_last_message():
    for status in ("error", "aborted"):
        event = parse(agent_stop("opencode", PROJECT, status=status), "opencode")
        assert (event.status, event.completed_turn) == (status, False)


def test_cursor_session_id_is_taken_when_the_conversation_id_is_empty():
    raw = agent_stop("cursor", PROJECT, conversation_id="", session_id="abc-1")
    assert parse(raw, "cursor").session_id == "abc-1"


def test_cursor_without_a_cwd_uses_its_first_workspace_root():
    raw = agent_stop("cursor", PROJECT, workspace_roots=["/a", "/b"])
    assert parse(raw, "cursor").cwd == "/a"


@pytest.mark.parametrize(
    ("agent", "field", "value"),
    [
        ("codex", "session_id", 7),
        ("gemini", "prompt_response", ["x"]),
        ("copilot", "sessionId", None),
        ("copilot", "stop_hook_active", "true"),
        ("cursor", "loop_count", True),
        ("cursor", "loop_count", -1),
        ("cursor", "loop_count", 1.5),
        ("cursor", "workspace_roots", "/a"),
        ("cursor", "status", 0),
        ("opencode", "status", {"name": "APIError"}),
        ("opencode", "stop_hook_active", 1),
        ("opencode", "last_assistant_message", 3),
    ],
)
def test_a_field_of_the_wrong_type_counts_as_absent(agent, field, value):
    raw = json.loads(agent_stop(agent, PROJECT))
    raw[field] = value
    event = parse(json.dumps(raw).encode(), agent)
    neutral = {
        "session_id": event.session_id,
        "sessionId": event.session_id,
        "prompt_response": event.final_text,
        "last_assistant_message": event.final_text,
        "stop_hook_active": event.stop_hook_active,
        "loop_count": event.loop_count,
        "workspace_roots": event.cwd,
        "status": event.status,
    }[field]
    assert neutral in (None, False)


@pytest.mark.parametrize("agent", AGENTS)
def test_unknown_fields_are_ignored(agent):
    raw = json.loads(agent_stop(agent, PROJECT))
    raw |= {"future_field": {"nested": [1, 2]}, "another": None}
    assert parse(json.dumps(raw).encode(), agent).session_id == SESSION
