"""One Stop hook for every agent: each keeps a loop going in its own output shape, within the
loop's own bound, and never touches another session's loop."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from ralphctl.hook.arming import arm
from ralphctl.hook.handler import respond
from tests.hook.agent_inputs import (
    AGENTS,
    INSTRUCTION_FIELD,
    agent_env,
    agent_stop,
    copilot_transcript,
    cursor_transcript,
)
from tests.hook.helpers import OTHER_SESSION, SESSION, fields_of, session_tracker

DONE = "<promise>COMPLETE</promise>"


def stop(agent: str, project: Path, *args: str, **event: Any) -> dict[str, object] | None:
    """What the hook prints for one Stop of ``agent`` (None: nothing)."""
    raw = agent_stop(agent, project, **event)
    line, _ = respond(raw, ["--format", agent, *args], agent_env(agent, project), time.time())
    return None if line is None else json.loads(line)


def instruction(agent: str, printed: dict[str, object] | None) -> str | None:
    """The next instruction a block gives the agent; None if the stop was allowed."""
    if printed is None or INSTRUCTION_FIELD[agent] not in printed:
        return None
    value = printed[INSTRUCTION_FIELD[agent]]
    assert isinstance(value, str)
    return value


def armed(project: Path, session: str | None = SESSION, **options: Any) -> Path:
    options.setdefault("max_iterations", 3)
    return Path(arm(str(project), "Fix the bug", session_id=session, **options).path)


@pytest.mark.parametrize("agent", AGENTS)
def test_every_agent_is_kept_going_in_its_own_shape_until_the_promise(agent, tmp_path):
    tracker = armed(tmp_path)
    first = stop(agent, tmp_path)
    assert first is not None
    assert "Ralph iteration 2/3" in (instruction(agent, first) or "")
    if agent == "gemini":
        assert first["decision"] == "deny"
    elif agent == "cursor":
        assert set(first) == {"followup_message"}
    else:
        assert first["decision"] == "block"
    transcript = None
    if agent == "copilot":
        transcript = copilot_transcript(tmp_path / "events.jsonl", "Working.", f"Done.\n{DONE}")
    elif agent == "cursor":
        transcript = cursor_transcript(tmp_path / "t.jsonl", f"Done.\n{DONE}")
    last = stop(agent, tmp_path, text=f"Done.\n{DONE}", transcript=transcript, again=True)
    assert instruction(agent, last) is None
    fields = fields_of(tracker)
    assert (fields["active"], fields["ended_reason"]) == (False, "completion")


@pytest.mark.parametrize("agent", AGENTS)
def test_the_loops_own_bound_wins_for_every_agent(agent, tmp_path):
    """Stops that never complete are blocked max_iterations - 1 times, then allowed."""
    tracker = armed(tmp_path, max_iterations=4)
    blocks = [instruction(agent, stop(agent, tmp_path, again=n > 0)) for n in range(8)]
    assert sum(block is not None for block in blocks) == 3
    assert blocks[3:] == [None] * 5
    assert fields_of(tracker)["ended_reason"] == "max_iterations"


@pytest.mark.parametrize("agent", AGENTS)
def test_an_empty_or_missing_session_id_never_touches_a_loop(agent, tmp_path):
    tracker = armed(tmp_path)
    pending = armed(tmp_path, session=None)
    key = {"copilot": "sessionId", "cursor": "conversation_id"}.get(agent, "session_id")
    env = agent_env(agent, tmp_path)
    env.pop("CLAUDE_CODE_SESSION_ID", None)
    empty: dict[str, Any] = {key: ""}
    null: dict[str, Any] = {key: None}
    for raw in (agent_stop(agent, tmp_path, **empty), agent_stop(agent, tmp_path, **null)):
        assert respond(raw, ["--format", agent], env, time.time()) == (None, None)
    assert fields_of(tracker)["iteration"] == 1
    assert pending.exists()  # nobody claimed the pending loop


@pytest.mark.parametrize("agent", AGENTS)
def test_another_session_of_the_project_is_left_alone(agent, tmp_path):
    tracker = armed(tmp_path)
    assert stop(agent, tmp_path, session=OTHER_SESSION) is None
    assert fields_of(tracker)["iteration"] == 1


@pytest.mark.parametrize("agent", ["codex", "gemini", "copilot", "cursor"])
def test_an_inherited_claude_session_id_is_not_the_agents(agent, tmp_path):
    """An agent started from inside a Claude Code session inherits its session id."""
    tracker = armed(tmp_path, session=OTHER_SESSION)
    env = agent_env(agent, tmp_path, CLAUDE_CODE_SESSION_ID=OTHER_SESSION)
    line, _ = respond(agent_stop(agent, tmp_path), ["--format", agent], env, time.time())
    assert line is None
    assert fields_of(tracker)["iteration"] == 1


def test_copilot_completion_is_read_from_its_transcript(tmp_path):
    armed(tmp_path)
    transcript = copilot_transcript(tmp_path / "events.jsonl", "Done?", "Not yet.")
    assert stop("copilot", tmp_path, transcript=transcript) is not None
    transcript = copilot_transcript(tmp_path / "events.jsonl", "Working.", DONE)
    assert stop("copilot", tmp_path, transcript=transcript, again=True) is None


def test_a_copilot_session_claims_the_pending_loop_its_transcript_shows(tmp_path):
    pending = arm(str(tmp_path), "Fix it", max_iterations=3)
    # their activity came after the arming, without the token
    theirs = copilot_transcript(tmp_path / "theirs.jsonl", "Other work.", at=time.time() + 60)
    assert stop("copilot", tmp_path, session=OTHER_SESSION, transcript=theirs) is None
    mine = copilot_transcript(
        tmp_path / "mine.jsonl", "Working.", tool_output=pending.confirmation()
    )
    assert stop("copilot", tmp_path, transcript=mine) is not None
    assert fields_of(session_tracker(tmp_path))["session_id"] == SESSION


def test_without_a_transcript_codex_claims_by_the_token_in_its_final_text(tmp_path):
    pending = arm(str(tmp_path), "Fix it", max_iterations=3)
    assert stop("codex", tmp_path, session=OTHER_SESSION, text="Other work.") is None
    assert stop("codex", tmp_path, text=f"Armed (token {pending.token}).") is not None
    assert fields_of(session_tracker(tmp_path))["session_id"] == SESSION


def test_a_gemini_session_claims_by_the_token_in_its_json_transcript(tmp_path):
    pending = arm(str(tmp_path), "Fix it", max_iterations=3)
    theirs = tmp_path / "theirs.json"
    theirs.write_text(json.dumps({"messages": [{"type": "gemini", "content": "Other work."}]}))
    later = time.time() + 60
    os.utime(theirs, (later, later))
    assert stop("gemini", tmp_path, session=OTHER_SESSION, transcript=theirs) is None
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"messages": [{"type": "user", "content": pending.confirmation()}]}))
    assert stop("gemini", tmp_path, transcript=mine) is not None


def test_an_aborted_or_failed_cursor_turn_is_no_completion_and_no_follow_up(tmp_path):
    tracker = armed(tmp_path)
    for status in ("aborted", "error"):
        assert stop("cursor", tmp_path, status=status) is None
    assert (fields_of(tracker)["active"], fields_of(tracker)["iteration"]) == (True, 1)
    assert stop("cursor", tmp_path) is not None  # the loop goes on at the next completed turn
    assert fields_of(tracker)["iteration"] == 2


def test_cursors_loop_limit_ends_the_loop_and_is_reported(tmp_path):
    tracker = armed(tmp_path, max_iterations=20)
    assert stop("cursor", tmp_path, loop_count=4) is not None
    assert stop("cursor", tmp_path, loop_count=5) is None  # Cursor would drop a 6th follow-up
    fields = fields_of(tracker)
    assert (fields["active"], fields["ended_reason"]) == (False, "interrupted")


def test_cursors_loop_limit_can_be_raised_to_match_hooks_json(tmp_path):
    armed(tmp_path, max_iterations=20)
    assert stop("cursor", tmp_path, "--loop-limit", "10", loop_count=9) is not None
    assert stop("cursor", tmp_path, "--loop-limit", "10", loop_count=10) is None


def test_the_loop_limit_note_names_cursor_and_no_completion(tmp_path):
    armed(tmp_path, max_iterations=20)
    raw = agent_stop("cursor", tmp_path, loop_count=5)
    _, record = respond(raw, ["--format", "cursor"], agent_env("cursor", tmp_path), time.time())
    assert record is not None
    assert (record.completed, record.stop_reason) == (False, "interrupted")
    assert record.stop_detail == "ended by Cursor's loop_limit (5 follow-ups)"


def test_a_promise_kept_at_cursors_loop_limit_still_completes(tmp_path):
    tracker = armed(tmp_path, max_iterations=20)
    transcript = cursor_transcript(tmp_path / "t.jsonl", DONE)
    assert stop("cursor", tmp_path, loop_count=5, transcript=transcript) is None
    assert fields_of(tracker)["ended_reason"] == "completion"


def test_gemini_can_clear_its_context_on_each_block(tmp_path):
    armed(tmp_path, clear_context=True)
    printed = stop("gemini", tmp_path)
    assert printed is not None
    assert printed["hookSpecificOutput"] == {"hookEventName": "AfterAgent", "clearContext": True}
    assert "Tracker:" in (instruction("gemini", printed) or "")  # the task survives the clear


@pytest.mark.parametrize("agent", ["claude", "codex", "copilot", "cursor"])
def test_only_gemini_is_asked_to_clear_its_context(agent, tmp_path):
    armed(tmp_path, clear_context=True)
    printed = stop(agent, tmp_path)
    assert printed is not None
    assert "hookSpecificOutput" not in printed


def test_a_cap_on_another_cli_is_reported_with_its_name(tmp_path):
    tracker = armed(tmp_path, max_iterations=5)
    assert stop("codex", tmp_path) is not None
    printed = stop("codex", tmp_path)  # no stop_hook_active after our block: Codex ended it
    assert printed is not None
    assert "ended by Codex, not by this hook" in str(printed["systemMessage"])
    assert fields_of(tracker)["cap_overrides"] == 1


@pytest.mark.parametrize("agent", ["codex", "gemini", "copilot", "cursor"])
def test_the_official_claude_plugins_state_is_left_to_claude_code(agent, tmp_path):
    state = tmp_path / ".claude" / "ralph-loop.local.md"
    state.parent.mkdir()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    state.write_text(
        f"---\nactive: true\niteration: 1\nmax_iterations: 5\ncompletion_promise: null\n"
        f'started_at: "{started}"\n---\nFix it\n'
    )
    assert stop(agent, tmp_path) is None
    assert stop("claude", tmp_path) is not None  # Claude Code's session takes it
