"""One rule says which loops ``resume`` can continue: the CLI, the API and ``status`` ask it."""

from __future__ import annotations

import pytest

from ralphctl.domain.states import LoopStatus, Runner, why_not_resumable

ENDED = (LoopStatus.STOPPED, LoopStatus.FAILED, LoopStatus.BLOCKED)
RUNNING = (LoopStatus.RUNNING, LoopStatus.RATE_LIMITED)


@pytest.mark.parametrize("mode", ["fresh", "hook"])
@pytest.mark.parametrize("runner", list(Runner))
def test_a_completed_loop_is_never_resumed(mode: str, runner: Runner) -> None:
    assert why_not_resumable(LoopStatus.COMPLETED, mode, runner) == (
        "it has completed; start a new loop"
    )


@pytest.mark.parametrize("mode", ["fresh", "hook"])
@pytest.mark.parametrize("status", RUNNING)
def test_a_loop_whose_runner_is_alive_is_running_not_resumable(mode, status) -> None:
    assert why_not_resumable(status, mode, Runner.ALIVE) == "it is running"


@pytest.mark.parametrize("status", [*ENDED, LoopStatus.PAUSED, LoopStatus.PENDING])
def test_a_fresh_loop_that_ended_or_waits_can_be_resumed(status: LoopStatus) -> None:
    assert why_not_resumable(status, "fresh", Runner.GONE) is None


@pytest.mark.parametrize("status", RUNNING)
@pytest.mark.parametrize("runner", [Runner.GONE, Runner.NONE])
def test_a_fresh_loop_whose_runner_died_can_be_resumed(status, runner) -> None:
    assert why_not_resumable(status, "fresh", runner) is None


@pytest.mark.parametrize("status", [LoopStatus.PAUSED, LoopStatus.PENDING])
def test_a_hook_loop_continues_its_session_only_from_pending_or_paused(status) -> None:
    assert why_not_resumable(status, "hook", Runner.GONE) is None


@pytest.mark.parametrize("status", [*ENDED, *RUNNING])
def test_a_hook_loop_whose_session_ended_otherwise_cannot_be_entered_again(status) -> None:
    why = why_not_resumable(status, "hook", Runner.GONE)
    assert why is not None
    assert "cannot be entered again" in why


@pytest.mark.parametrize("status", RUNNING)
def test_a_plugin_loop_goes_on_in_the_users_own_session(status: LoopStatus) -> None:
    why = why_not_resumable(status, "hook", Runner.NONE)
    assert why is not None
    assert "/cancel-ralph ends it" in why
