"""Anthropic's ``.claude/ralph-loop.local.md``: the same semantics, minus the plugin's bugs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ralphctl.hook.clock import iso
from tests.hook.helpers import (
    OTHER_SESSION,
    SESSION,
    answer,
    body_of,
    decision,
    fields_of,
    hook_env,
    run_hook,
    stop_event,
)


def official_state(
    project: Path,
    *,
    iteration: int = 1,
    max_iterations: int = 3,
    promise: str = '"DONE"',
    session: str = "",
    started: str | None = None,
    prompt: str = "Fix the bug",
) -> Path:
    """What the official setup-ralph-loop.sh writes (values unescaped, as it does)."""
    path = project / ".claude" / "ralph-loop.local.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    moment = started or iso(time.time())
    path.write_text(
        "---\n"
        "active: true\n"
        f"iteration: {iteration}\n"
        f"session_id: {session}\n"
        f"max_iterations: {max_iterations}\n"
        f"completion_promise: {promise}\n"
        f'started_at: "{moment}"\n'
        "---\n"
        f"\n{prompt}\n"
    )
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_the_prompt_is_re_injected_and_the_iteration_counted(project):
    state = official_state(project, session=SESSION)
    printed = decision(run_hook(stop_event(), hook_env(project)))
    assert printed is not None
    assert printed["decision"] == "block"
    assert printed["reason"].startswith("Fix the bug\n\nTo stop: output <promise>DONE</promise>")
    assert printed["systemMessage"] == "Ralph iteration 2/3"
    assert fields_of(state)["iteration"] == 2
    assert body_of(state) == "\nFix the bug\n"


def test_the_promise_completes_and_the_file_is_deactivated_not_deleted(project):
    state = official_state(project, session=SESSION)
    done = run_hook(stop_event(text="<promise>DONE</promise>"), hook_env(project))
    assert decision(done) == {"systemMessage": "Ralph loop complete at iteration 1/3."}
    assert fields_of(state)["active"] is False
    assert decision(run_hook(stop_event(), hook_env(project))) is None


def test_max_iterations_stop_as_the_plugin_counts_them(project):
    official_state(project, session=SESSION, iteration=3, max_iterations=3)
    printed = decision(run_hook(stop_event(), hook_env(project)))
    assert printed == {"systemMessage": "Ralph loop stopped: max iterations (3) reached."}


def test_another_sessions_state_is_ignored(project):
    state = official_state(project, session=OTHER_SESSION)
    assert decision(run_hook(stop_event(), hook_env(project))) is None
    assert fields_of(state)["iteration"] == 1


def test_a_state_without_session_is_claimed_by_the_first_session_only(project):
    state = official_state(project)
    assert answer(run_hook(stop_event(), hook_env(project)))["decision"] == "block"
    assert fields_of(state)["session_id"] == SESSION
    other = run_hook(stop_event(OTHER_SESSION), hook_env(project, OTHER_SESSION))
    assert decision(other) is None
    assert fields_of(state)["iteration"] == 2


def test_a_stale_state_without_session_is_not_hijacked(project):
    state = official_state(project, started="2020-01-01T00:00:00Z")
    done = run_hook(stop_event(), hook_env(project))
    assert decision(done) is None
    assert b"stale" in done.stderr
    assert fields_of(state)["active"] is False
    assert state.exists()


def test_max_iterations_zero_is_capped_with_a_warning(project):
    official_state(project, session=SESSION, max_iterations=0)
    printed = answer(run_hook(stop_event(), hook_env(project)))
    assert printed["systemMessage"] == (
        "Ralph iteration 2/100 | max_iterations 0 (unlimited) is capped at 100"
    )


def test_a_null_promise_never_completes_only_the_bound_ends_it(project):
    official_state(project, session=SESSION, promise="null")
    printed = answer(run_hook(stop_event(text="<promise>null</promise>"), hook_env(project)))
    assert printed["decision"] == "block"
    assert "To stop" not in printed["reason"]


def test_an_unescaped_quote_in_the_promise_is_read_as_the_plugin_reads_it(project):
    official_state(project, session=SESSION, promise='"say "hi""')
    done = run_hook(stop_event(text='<promise>say "hi"</promise>'), hook_env(project))
    assert answer(done)["systemMessage"].startswith("Ralph loop complete")


@pytest.mark.parametrize(
    "damage",
    [{"iteration": "abc"}, {"max_iterations": "-1"}, {"prompt": ""}],
    ids=["iteration", "max_iterations", "empty-prompt"],
)
def test_corrupt_values_deactivate_instead_of_deleting_the_users_file(project, damage):
    options = {"session": SESSION} | damage
    state = official_state(project, **options)
    done = run_hook(stop_event(), hook_env(project))
    assert decision(done) is None
    assert b"corrupt" in done.stderr
    assert state.exists()
    assert fields_of(state)["active"] is False
