"""Arming a loop: the tracker it writes, the bounds it insists on, the flags it accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralphctl.hook.arming import DEFAULT_TEMPLATE, ArmError, arm
from tests.hook.helpers import (
    SESSION,
    arm_cli,
    body_of,
    fields_of,
    hook_env,
    session_tracker,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_a_new_tracker_holds_the_loop_and_a_body_for_the_agent(project):
    armed = arm(str(project), "  Fix the flaky tests  ", session_id=SESSION, now=1.8e9)
    tracker = Path(armed.path)
    assert tracker == session_tracker(project)
    fields = fields_of(tracker)
    assert fields["active"] is True
    assert (fields["iteration"], fields["max_iterations"]) == (1, 100)
    assert fields["completion_marker"] == "<promise>COMPLETE</promise>"
    assert fields["started_at"] == "2027-01-15T08:00:00Z"
    assert fields["max_runtime_s"] == 14400.0
    assert fields["session_id"] == SESSION
    assert fields["task"] == "Fix the flaky tests"
    assert isinstance(fields["loop_id"], str)
    assert len(fields["loop_id"]) == 12
    assert body_of(tracker) == f"## Task\n\nFix the flaky tests\n\n{DEFAULT_TEMPLATE}\n"
    assert (project / ".ralph" / ".gitignore").read_text().endswith("*\n")


def test_the_confirmation_names_the_exact_completion_line(project):
    armed = arm(
        str(project),
        "Fix it",
        session_id=SESSION,
        completion_signal="<promise>ALL GREEN</promise>",
        max_iterations=7,
    )
    text = armed.confirmation()
    assert "\n<promise>ALL GREEN</promise>\n" in text
    assert "7 iterations" in text
    assert armed.path in text


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"max_iterations": 0}, "0 is not 'unlimited'"),
        ({"max_iterations": None, "max_runtime_s": None}, "needs a runtime limit"),
        ({"max_runtime_s": -5.0}, "max runtime: must be a duration > 0 and at most 366 days"),
        ({"max_cost_usd": 0.0}, r"max cost: must be an amount in USD in \(0, "),
        ({"max_tokens": 0}, "max tokens"),
        ({"completion_signal": "  "}, "completion signal"),
        ({"session_id": "../etc"}, "not a valid session id"),
        ({"template": "# Progress\n\n<promise>COMPLETE</promise>"}, "already declares"),
    ],
)
def test_unsafe_or_meaningless_loops_are_refused(project, options, words):
    with pytest.raises(ArmError, match=words):
        arm(str(project), "Fix it", **({"session_id": SESSION} | options))
    assert not session_tracker(project).exists()


def test_an_empty_prompt_is_refused(project):
    with pytest.raises(ArmError, match="empty"):
        arm(str(project), "   ", session_id=SESSION)


def test_unlimited_means_no_iteration_limit_but_still_a_runtime_one(project):
    arm(str(project), "Fix it", session_id=SESSION, max_iterations=None)
    fields = fields_of(session_tracker(project))
    assert fields["max_iterations"] is None
    assert fields["max_runtime_s"] == 14400.0


def test_replace_archives_the_active_loop_and_starts_a_new_one(project):
    arm(str(project), "first", session_id=SESSION)
    with pytest.raises(ArmError, match="already has an active Ralph loop"):
        arm(str(project), "second", session_id=SESSION)
    armed = arm(str(project), "second", session_id=SESSION, replace=True)
    assert armed.archived
    assert fields_of(Path(armed.archived))["task"] == "first"
    assert fields_of(session_tracker(project))["task"] == "second"


def test_a_finished_loop_is_archived_when_a_new_one_is_armed(project):
    from tests.hook.helpers import edit_fields

    arm(str(project), "first", session_id=SESSION)
    edit_fields(session_tracker(project), active=False)
    arm(str(project), "second", session_id=SESSION)
    assert (session_tracker(project).parent / "loop-tracker.1.md").exists()


# -- the command line (what /ralph-loop runs) ----------------------------------------------


def test_the_cli_takes_flags_in_both_forms_anywhere_among_the_prompt_words(project):
    done = arm_cli(
        project,
        "Fix",
        "--max-iterations",
        "15",
        "the",
        "--completion-promise=ALL GREEN",
        "tests",
        "--max-runtime=90m",
        "--max-cost",
        "2.5",
        "--continue-message",
        "Go on.",
    )
    assert done.returncode == 0, done.stderr
    fields = fields_of(session_tracker(project))
    assert fields["task"] == "Fix the tests"
    assert (fields["max_iterations"], fields["max_runtime_s"], fields["max_cost_usd"]) == (
        15,
        5400.0,
        2.5,
    )
    assert fields["completion_marker"] == "<promise>ALL GREEN</promise>"
    assert fields["continue_message"] == "Go on."
    assert "<promise>ALL GREEN</promise>" in done.stdout


def test_the_session_comes_from_the_flag_or_the_environment(project):
    assert arm_cli(project, "Fix it", "--session", "explicit-1").returncode == 0
    assert session_tracker(project, "explicit-1").exists()
    assert arm_cli(project, "Fix it").returncode == 0  # CLAUDE_CODE_SESSION_ID
    assert session_tracker(project).exists()


def test_without_a_session_the_cli_arms_a_pending_loop(project):
    done = arm_cli(project, "Fix it", env=hook_env(project, session=None))
    assert done.returncode == 0
    assert "pending" in done.stdout
    assert list((project / ".ralph" / "pending").glob("*.md"))


def test_a_tracker_template_file_becomes_the_body(project, tmp_path):
    template = tmp_path / "tracker.md"
    template.write_text("# E2E progress\n\n- [ ] login\n")
    assert arm_cli(project, "Test it", "--tracker-template", str(template)).returncode == 0
    assert body_of(session_tracker(project)).endswith("# E2E progress\n\n- [ ] login\n")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["Fix it", "--max-iterations", "0"], "--unlimited"),
        (["Fix it", "--unlimited", "--max-iterations", "3"], "not both"),
        (["Fix it", "--max-iterations", "three"], "invalid int value"),
        (["Fix it", "--max-runtime", "soon"], "not a duration"),
        (["Fix it", "--completion-promise", "a", "--completion-signal", "b"], "not allowed"),
        (["Fix it", "--max-iter", "3"], "unrecognized arguments"),
        (["Fix it", "--tracker-template", "/nonexistent.md"], "cannot read"),
        ([], "empty"),
    ],
)
def test_cli_errors_are_clear_and_write_nothing(project, args, words):
    done = arm_cli(project, *args)
    assert done.returncode == 2
    assert words in done.stderr
    assert not session_tracker(project).exists()


def test_the_unlimited_flag(project):
    assert arm_cli(project, "Fix it", "--unlimited").returncode == 0
    assert fields_of(session_tracker(project))["max_iterations"] is None
