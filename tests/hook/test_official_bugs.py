"""One regression test per row of the official plugin's bug table (claude-protocol.md §1.10)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ralphctl.hook import handler, tracker
from ralphctl.hook.arming import arm
from tests.hook.helpers import (
    HOOK_FILE,
    OTHER_SESSION,
    SESSION,
    answer,
    arm_cli,
    decision,
    edit_fields,
    fields_of,
    hook_env,
    run_hook,
    session_tracker,
    stop_event,
)

PROMISE = "<promise>ALL GREEN</promise>"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def arm_session(project: Path, session: str = SESSION, **options: Any) -> Path:
    settings: dict[str, Any] = {"max_iterations": 5, "completion_signal": PROMISE} | options
    return Path(arm(str(project), f"task of {session}", session_id=session, **settings).path)


def test_1_session_bleed_another_session_in_the_same_project_is_untouched(project):
    mine = arm_session(project)
    other = run_hook(stop_event(OTHER_SESSION), hook_env(project, OTHER_SESSION))
    assert decision(other) is None
    assert fields_of(mine)["iteration"] == 1  # no budget burned by the other session


def test_2_two_loops_in_one_project_each_run_on_their_own(project):
    first, second = arm_session(project), arm_session(project, OTHER_SESSION)
    for session in (SESSION, OTHER_SESSION, SESSION):
        assert decision(run_hook(stop_event(session), hook_env(project, session)))
    assert fields_of(first)["iteration"] == 3
    assert fields_of(second)["iteration"] == 2
    assert fields_of(first)["task"] == f"task of {SESSION}"


def test_2_a_second_loop_for_the_same_session_does_not_overwrite_the_first(project):
    armed = arm_session(project)
    done = arm_cli(project, "another task", "--session", SESSION)
    assert done.returncode == 2
    assert "already has an active Ralph loop" in done.stderr
    assert fields_of(armed)["task"] == f"task of {SESSION}"


def test_3_a_last_turn_of_tool_calls_only_keeps_the_loop_going(project, tmp_path):
    armed = arm_session(project)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "id": "msg_1",
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
                },
            }
        )
        + "\n"
    )
    for event in (
        stop_event(text=""),
        stop_event(text=None, transcript_path=str(transcript)),
    ):
        assert answer(run_hook(event, hook_env(project)))["decision"] == "block"
    assert fields_of(armed)["active"] is True


def test_4_transcript_lag_the_final_text_comes_from_stdin_not_the_transcript(project, tmp_path):
    armed = arm_session(project)
    lagging = tmp_path / "lagging.jsonl"
    lagging.write_text('{"type":"user","message":{"role":"user","content":"go"}}\n')
    event = stop_event(text=f"Done.\n{PROMISE}", transcript_path=str(lagging))
    assert answer(run_hook(event, hook_env(project)))["systemMessage"].startswith(
        "Ralph loop complete"
    )
    assert fields_of(armed)["ended_reason"] == "completion"


def test_4_a_missing_transcript_never_kills_the_loop(project):
    armed = arm_session(project)
    event = stop_event(text=None, transcript_path="/nonexistent/t.jsonl")
    assert answer(run_hook(event, hook_env(project)))["decision"] == "block"
    assert fields_of(armed)["active"] is True


@pytest.mark.parametrize(
    "text",
    [
        "ALL GREEN",
        "I will not output <promise>ALL GREEN</promise> until the tests pass.",
        "Once it works I'll print <promise>ALL GREEN</promise>.",
        "```\n<promise>ALL GREEN</promise>\n```",
        "> <promise>ALL GREEN</promise>",
    ],
    ids=["untagged", "negated", "conditional", "fenced", "quoted"],
)
def test_5_untagged_negated_or_quoted_promises_do_not_complete(project, text):
    armed = arm_session(project)
    assert answer(run_hook(stop_event(text=text), hook_env(project)))["decision"] == "block"
    assert fields_of(armed)["active"] is True


def test_6_flags_with_equals_are_flags_and_unknown_flags_are_errors(project):
    done = arm_cli(project, "Fix", "it", "--max-iterations=3", "--completion-promise=ALL GREEN")
    assert done.returncode == 0, done.stderr
    fields = fields_of(session_tracker(project))
    assert (fields["max_iterations"], fields["task"]) == (3, "Fix it")
    assert fields["completion_marker"] == PROMISE
    wrong = arm_cli(project, "Fix it", "--max-iteration=3", "--session", OTHER_SESSION)
    assert wrong.returncode == 2
    assert "unrecognized arguments: --max-iteration=3" in wrong.stderr
    assert not session_tracker(project, OTHER_SESSION).exists()


def test_6_zero_is_not_unlimited_and_the_default_is_finite(project):
    zero = arm_cli(project, "Fix it", "--max-iterations", "0")
    assert zero.returncode == 2
    assert "--unlimited" in zero.stderr
    assert arm_cli(project, "Fix it").returncode == 0
    assert fields_of(session_tracker(project))["max_iterations"] == 100


def test_7_stop_hook_active_is_counted_and_the_loop_ends_at_its_bound(project):
    armed = arm_session(project, max_iterations=3)
    env = hook_env(project)
    answers = [decision(run_hook(stop_event(stop_hook_active=True), env)) for _ in range(4)]
    assert [a and a.get("decision") for a in answers] == ["block", "block", None, None]
    assert fields_of(armed)["stop_hook_active_count"] == 3


def test_8_no_jq_bash_or_path_needed_and_crashes_fail_open(project, monkeypatch):
    armed = arm_session(project)
    env = hook_env(project) | {"PATH": ""}
    command = [sys.executable, "-I", "-S", str(HOOK_FILE), "stop"]
    assert answer(run_hook(stop_event(), env, command=command))["decision"] == "block"

    def crash(*args, **kwargs):
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(tracker, "write_atomic", crash)
    assert handler.respond(stop_event(), [], hook_env(project), time.time()) == (None, None)
    assert fields_of(armed)["iteration"] == 2  # unchanged by the crashed Stop


def test_9_no_execute_bit_needed_the_interpreter_runs_the_file(project, tmp_path):
    arm_session(project)
    copy = tmp_path / "ralphctl"
    package = HOOK_FILE.parents[1]
    for source in package.rglob("*.py"):
        target = copy / source.relative_to(package)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source.read_text())
        target.chmod(0o444)
    hook_file = copy / "hook" / "__main__.py"
    assert not os.access(hook_file, os.X_OK) or os.geteuid() == 0
    command = [sys.executable, "-I", "-S", str(hook_file), "stop"]
    assert decision(run_hook(stop_event(), hook_env(project), command=command))


def test_10_no_plugin_root_variable_is_needed(project):
    arm_session(project)
    env = hook_env(project)
    env.pop("CLAUDE_PLUGIN_ROOT", None)
    assert answer(run_hook(stop_event(), env))["decision"] == "block"


def test_11_output_is_valid_json_whatever_the_text_and_the_agents_cwd(project):
    arm_session(project, continue_message='Keep "going"\n\tand \\ then 🚀')
    done = run_hook(stop_event(cwd=str(project / "deep" / "dir")), hook_env(project))
    assert answer(done)["reason"].startswith('Keep "going"\n\tand \\ then 🚀')


def test_12_an_error_mid_decision_leaves_a_consistent_tracker(project, monkeypatch):
    armed = arm_session(project)
    before = armed.read_text()

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    assert handler.respond(stop_event(), [], hook_env(project), time.time()) == (None, None)
    assert armed.read_text() == before
    assert not [p for p in armed.parent.iterdir() if p.name.endswith(".tmp")]


def test_13_stale_state_a_finished_loop_never_blocks_again(project):
    armed = arm_session(project)
    edit_fields(armed, active=False, ended_reason="completion")
    assert decision(run_hook(stop_event(), hook_env(project))) is None


def test_13_stale_state_an_abandoned_loop_resumed_later_ends_on_its_runtime(project):
    armed = arm_session(project, max_runtime_s=3600.0)
    edit_fields(armed, started_at="2020-01-01T00:00:00Z")
    printed = decision(run_hook(stop_event(), hook_env(project)))
    assert printed is not None
    assert "max_runtime" in printed["systemMessage"]
    assert fields_of(armed)["active"] is False
