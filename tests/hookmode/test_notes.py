"""A hook-mode block carries the notes a fresh loop's next prompt would."""

from __future__ import annotations

import json

import pytest

from ralphctl.agents.events import PermissionDenied, ToolCall
from ralphctl.domain.model import PermissionDenial
from ralphctl.domain.steering import NO_HUMAN_NOTE
from ralphctl.engine.hookmode.activity import Activity, ActivityLog
from ralphctl.engine.hookmode.notes import iteration_notes, with_notes

BLOCK = json.dumps({"decision": "block", "reason": "Go on. (Ralph iteration 2/5)"})


def test_a_question_to_the_absent_user_is_answered_by_the_no_human_note():
    notes = iteration_notes("Which database should I use, Postgres or SQLite?", Activity())
    answer = json.loads(with_notes(BLOCK, notes) or "")
    assert answer["reason"] == f"Go on. (Ralph iteration 2/5)\n\n{NO_HUMAN_NOTE}"
    assert answer["decision"] == "block"


def test_denied_tools_are_named_so_the_agent_works_without_them():
    denials = (PermissionDenial("Write"), PermissionDenial("Bash"), PermissionDenial("Write"))
    [note] = iteration_notes("I could not write the file.", Activity(denials=denials))
    assert "Bash, Write" in note


def test_an_iteration_without_signals_adds_nothing():
    assert iteration_notes("Wrote a.txt; b.txt is next.", Activity()) == []
    assert with_notes(BLOCK, []) == BLOCK


@pytest.mark.parametrize(
    "line",
    [
        None,
        "",
        "not json",
        json.dumps(["block"]),
        json.dumps({"systemMessage": "Ralph loop stopped at iteration 3: stop requested."}),
        json.dumps({"decision": "block"}),
        json.dumps({"decision": "approve", "reason": "done"}),
    ],
)
def test_an_answer_that_does_not_continue_the_loop_is_left_as_it_is(line):
    assert with_notes(line, [NO_HUMAN_NOTE]) == line


def test_a_gemini_deny_carries_the_notes_too():
    line = json.dumps({"decision": "deny", "reason": "Go on."})
    assert json.loads(with_notes(line, ["A note."]) or "")["reason"] == "Go on.\n\nA note."


def test_an_iteration_whose_live_tool_calls_only_ran_tests_gets_the_test_only_note():
    log = ActivityLog()
    log.on_agent_event(ToolCall("Bash", "t1", "pytest -q"))
    log.on_agent_event(ToolCall("Read", "t2", "app.py"))
    [note] = iteration_notes("The tests pass.", log.current())
    assert note.startswith("The last iteration only ran tests and changed nothing")


def test_a_file_edit_in_the_iteration_means_it_did_more_than_run_tests():
    log = ActivityLog()
    log.on_agent_event(ToolCall("Bash", "t1", "pytest -q"))
    log.on_agent_event(ToolCall("Edit", "t2", "app.py", edits_files=True))
    assert iteration_notes("Fixed it.", log.current()) == []


def test_the_activity_is_per_iteration_taking_it_starts_the_next_empty():
    log = ActivityLog()
    log.on_agent_event(ToolCall("Write", "t1", "a.py", edits_files=True))
    log.on_agent_event(PermissionDenied("Write", "denied", "t1"))
    taken = log.take()
    assert [(t.name, t.edits_files, t.tool_use_id) for t in taken.tool_uses] == [
        ("Write", True, "t1")
    ]
    assert taken.denials == (PermissionDenial("Write", "t1", "denied"),)
    assert log.take() == Activity()


def test_a_cursor_follow_up_carries_the_notes_in_its_only_field():
    line = json.dumps({"followup_message": "Go on."})
    assert json.loads(with_notes(line, ["A note."]) or "") == {
        "followup_message": "Go on.\n\nA note."
    }
