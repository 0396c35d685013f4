"""A tracker deleted mid-loop ends the loop (the stop is allowed), and the hook says so once:
on stderr and in ``.ralph/hook.log``."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralphctl.hook.arming import arm
from tests.hook.helpers import SESSION, answer, decision, hook_env, run_hook, stop_event

WARNING = b"disappeared mid-loop"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_the_stop_after_a_block_warns_that_the_tracker_vanished(project):
    tracker = Path(arm(str(project), "Fix it", session_id=SESSION).path)
    assert answer(run_hook(stop_event(), hook_env(project)))["decision"] == "block"
    tracker.unlink()

    done = run_hook(stop_event(stop_hook_active=True), hook_env(project))

    assert decision(done) is None
    assert WARNING in done.stderr
    assert str(tracker) in done.stderr.decode()
    assert WARNING.decode() in (project / ".ralph" / "hook.log").read_text()


def test_later_stops_of_that_session_pass_quietly(project):
    tracker = Path(arm(str(project), "Fix it", session_id=SESSION).path)
    tracker.unlink()
    done = run_hook(stop_event(stop_hook_active=False), hook_env(project))
    assert (decision(done), done.stderr) == (None, b"")


def test_a_session_that_never_had_a_loop_passes_quietly(project):
    done = run_hook(stop_event(stop_hook_active=True), hook_env(project))
    assert (decision(done), done.stderr) == (None, b"")
    assert not (project / ".ralph").exists()
