import pytest

from ralphctl.domain.states import (
    TRANSITIONS,
    IllegalTransition,
    LoopStatus,
    StopReason,
    transition,
)


@pytest.mark.parametrize(
    ("current", "target"),
    [(current, target) for current, targets in TRANSITIONS.items() for target in sorted(targets)],
)
def test_every_listed_transition_is_legal(current, target):
    assert transition(current, target) is target


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (current, target)
        for current in LoopStatus
        for target in LoopStatus
        if target not in TRANSITIONS[current]
    ],
)
def test_every_other_transition_is_refused_with_a_clear_message(current, target):
    with pytest.raises(IllegalTransition, match=f"cannot go from {current} to {target}"):
        transition(current, target)


def test_a_completed_loop_is_final():
    assert TRANSITIONS[LoopStatus.COMPLETED] == frozenset()
    with pytest.raises(IllegalTransition, match="none \\(it has ended\\)"):
        transition(LoopStatus.COMPLETED, LoopStatus.RUNNING)


def test_ended_loops_other_than_completed_can_be_resumed():
    for status in (LoopStatus.STOPPED, LoopStatus.FAILED, LoopStatus.BLOCKED):
        assert transition(status, LoopStatus.RUNNING) is LoopStatus.RUNNING


@pytest.mark.parametrize(
    ("reason", "code", "status"),
    [
        (StopReason.COMPLETION, 0, LoopStatus.COMPLETED),
        (StopReason.MAX_ITERATIONS, 1, LoopStatus.STOPPED),
        (StopReason.MAX_RUNTIME, 1, LoopStatus.STOPPED),
        (StopReason.MAX_COST, 1, LoopStatus.STOPPED),
        (StopReason.MAX_TOKENS, 1, LoopStatus.STOPPED),
        (StopReason.CIRCUIT_BREAKER, 3, LoopStatus.FAILED),
        (StopReason.AGENT_UNAVAILABLE, 3, LoopStatus.FAILED),
        (StopReason.BLOCKED, 4, LoopStatus.BLOCKED),
        (StopReason.USER_STOP, 130, LoopStatus.STOPPED),
        (StopReason.INTERRUPTED, 130, LoopStatus.STOPPED),
    ],
)
def test_stop_reasons_map_to_exit_codes_and_statuses(reason, code, status):
    assert reason.exit_code == code
    assert reason.status is status


def test_only_waiting_or_running_loops_are_active():
    active = {status for status in LoopStatus if status.is_active}
    assert active == {
        LoopStatus.PENDING,
        LoopStatus.RUNNING,
        LoopStatus.PAUSED,
        LoopStatus.RATE_LIMITED,
    }
