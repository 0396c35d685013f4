"""The circuit breaker: every transition, every threshold, persistence and restarts."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ralphctl.domain.breaker import (
    BreakerAction,
    BreakerConfig,
    BreakerState,
    BreakerStatus,
    IterationOutcome,
    TripCause,
    allow_trial,
    check,
    error_signature,
    from_dict,
    near_trip,
    record,
    reset,
    to_dict,
)

T0 = 1_800_000_000.0
DEFAULTS = BreakerConfig()
RECOVERING = BreakerConfig(auto_recover=True)


def progress(n: int = 1) -> IterationOutcome:
    return IterationOutcome(n, progressed=True)


def stalled(n: int = 1) -> IterationOutcome:
    return IterationOutcome(n)


def failed(n: int = 1, signature: str = "crash: boom") -> IterationOutcome:
    return IterationOutcome(n, errored=True, error_signature=signature)


def denied(n: int = 1, *tools: str, progressed: bool = False) -> IterationOutcome:
    return IterationOutcome(n, denied_tools=tools or ("Write",), progressed=progressed)


def run(
    outcomes: list[IterationOutcome],
    config: BreakerConfig = DEFAULTS,
    state: BreakerState | None = None,
    start: float = T0,
) -> BreakerState:
    """Record the outcomes one second apart."""
    state = state or BreakerState()
    for index, outcome in enumerate(outcomes):
        state = record(state, outcome, config, start + index)
    return state


def tripped(config: BreakerConfig = RECOVERING) -> BreakerState:
    """A breaker that tripped on 5 errors at T0 + 4."""
    return run([failed(n, f"crash: error {n}") for n in range(1, 6)], config)


# --- closed -------------------------------------------------------------------------------


def test_a_fresh_breaker_lets_iterations_run():
    verdict = check(BreakerState(), DEFAULTS, T0)
    assert verdict.action is BreakerAction.RUN
    assert verdict.state == BreakerState()


@pytest.mark.parametrize(
    ("outcomes", "config", "cause"),
    [
        pytest.param(
            [failed(n, f"crash: error {n}") for n in range(5)],
            DEFAULTS,
            TripCause.CONSECUTIVE_ERRORS,
            id="5 different errors in a row",
        ),
        pytest.param([failed(n) for n in range(5)], DEFAULTS, TripCause.SAME_ERROR, id="5 same"),
        pytest.param([stalled(n) for n in range(3)], DEFAULTS, TripCause.NO_PROGRESS, id="3 idle"),
        pytest.param([denied(1), denied(2)], DEFAULTS, TripCause.PERMISSION_DENIALS, id="2 denied"),
        pytest.param(
            [failed(1, "a"), failed(2, "b")],
            BreakerConfig(max_consecutive_errors=2),
            TripCause.CONSECUTIVE_ERRORS,
            id="max_consecutive_errors is configurable",
        ),
        pytest.param(
            [failed(1, "a"), failed(2), progress(3), failed(4), failed(5), failed(6)],
            BreakerConfig(same_error_threshold=3, max_consecutive_errors=None),
            TripCause.SAME_ERROR,
            id="same_error_threshold is configurable",
        ),
        pytest.param(
            [stalled(1)],
            BreakerConfig(no_progress_threshold=1),
            TripCause.NO_PROGRESS,
            id="no_progress_threshold is configurable",
        ),
        pytest.param(
            [denied(n) for n in range(4)],
            BreakerConfig(permission_denial_threshold=4, no_progress_threshold=None),
            TripCause.PERMISSION_DENIALS,
            id="permission_denial_threshold is configurable",
        ),
    ],
)
def test_each_streak_trips_the_breaker_at_its_threshold(outcomes, config, cause):
    state = run(outcomes, config)
    assert state.status is BreakerStatus.OPEN
    assert state.cause is cause
    assert state.opened_at == T0 + len(outcomes) - 1
    assert state.trips == 1
    assert state.history[-1].target is BreakerStatus.OPEN
    assert state.history[-1].iteration == outcomes[-1].iteration


@pytest.mark.parametrize(
    ("outcomes", "config"),
    [
        pytest.param([failed(n, str(n)) for n in range(4)], DEFAULTS, id="4 errors"),
        pytest.param([stalled(1), stalled(2)], DEFAULTS, id="2 without progress"),
        pytest.param([denied(1)], DEFAULTS, id="1 denial"),
        pytest.param(
            [failed(1), failed(2), failed(3), failed(4), progress(5), failed(6)],
            DEFAULTS,
            id="a success ends the error streaks",
        ),
        pytest.param(
            [stalled(1), stalled(2), progress(3), stalled(4), stalled(5)],
            DEFAULTS,
            id="progress ends the no-progress streak",
        ),
        pytest.param(
            [failed(n, str(n)) for n in range(10)],
            BreakerConfig(max_consecutive_errors=None, same_error_threshold=None),
            id="errors alone never count as 'no progress'",
        ),
        pytest.param(
            [denied(n, progressed=True) for n in range(5)],
            DEFAULTS,
            id="denials that did not stop the work are only warnings",
        ),
        pytest.param(
            [denied(1), stalled(2), denied(3)],
            BreakerConfig(no_progress_threshold=None),
            id="denial streaks must be consecutive",
        ),
        pytest.param(
            [stalled(n) for n in range(20)],
            BreakerConfig(no_progress_threshold=None),
            id="a threshold of None is off",
        ),
    ],
)
def test_below_the_thresholds_the_breaker_stays_closed(outcomes, config):
    state = run(outcomes, config)
    assert state.status is BreakerStatus.CLOSED
    assert check(state, config, T0 + 100).action is BreakerAction.RUN


def test_the_most_specific_reason_is_reported():
    state = run([failed(n, "api_overloaded: API Error: <n> Overloaded") for n in range(5)])
    assert state.cause is TripCause.SAME_ERROR
    assert state.reason == (
        "the same error 5 times in a row: api_overloaded: API Error: <n> Overloaded"
    )


def test_a_permission_trip_names_the_tools_of_the_whole_streak():
    state = run([denied(1, "Write"), denied(2, "Bash", "Write")])
    assert state.denied_tools == ("Bash", "Write")
    assert "permission denied for Bash, Write in 2 iterations" in state.reason


@pytest.mark.parametrize(
    "ignored",
    [
        IterationOutcome(9, errored=True, interrupted=True),
        IterationOutcome(9, usage_limited=True, errored=True),
        IterationOutcome(9, interrupted=True, denied_tools=("Bash",)),
    ],
    ids=["interrupted", "usage-limited", "interrupted with denials"],
)
@pytest.mark.parametrize(
    "state",
    [
        run([failed(n) for n in range(4)]),
        run([stalled(1), stalled(2)]),
        replace(tripped(), status=BreakerStatus.HALF_OPEN),
    ],
    ids=["4 errors", "2 idle", "half-open"],
)
def test_interrupted_and_usage_limited_iterations_count_neither_way(ignored, state):
    assert record(state, ignored, DEFAULTS, T0 + 50) is state


# --- open ---------------------------------------------------------------------------------


def test_without_auto_recover_an_open_breaker_fails_the_loop():
    state = tripped(DEFAULTS)
    verdict = check(state, DEFAULTS, T0 + 10**6)
    assert verdict.action is BreakerAction.TRIP
    assert verdict.reason == "5 failed iterations in a row (last: crash: error 5)"
    assert verdict.state is state


@pytest.mark.parametrize("cooldown", [0.0, 60.0, 1800.0])
def test_with_auto_recover_the_loop_waits_out_the_cooldown(cooldown):
    config = replace(RECOVERING, cooldown_s=cooldown)
    state = tripped(config)
    opened = T0 + 4
    if cooldown:
        verdict = check(state, config, opened + cooldown - 0.5)
        assert verdict.action is BreakerAction.WAIT
        assert verdict.until == opened + cooldown
        assert verdict.state is state
    verdict = check(state, config, opened + cooldown)
    assert verdict.action is BreakerAction.RUN
    assert verdict.state.status is BreakerStatus.HALF_OPEN
    assert verdict.state.history[-1].source is BreakerStatus.OPEN
    assert verdict.state.history[-1].at == opened + cooldown


def test_the_default_cooldown_is_30_minutes():
    assert DEFAULTS.cooldown_s == 1800
    assert not DEFAULTS.auto_recover


# --- half-open ----------------------------------------------------------------------------


def half_open(config: BreakerConfig = RECOVERING) -> BreakerState:
    return check(tripped(config), config, T0 + 10_000).state


@pytest.mark.parametrize(
    ("trial", "status"),
    [
        pytest.param(progress(6), BreakerStatus.CLOSED, id="progress closes it"),
        pytest.param(stalled(6), BreakerStatus.CLOSED, id="a clean run ends an error trip"),
        pytest.param(failed(6), BreakerStatus.OPEN, id="another error reopens it"),
        pytest.param(
            IterationOutcome(6, interrupted=True), BreakerStatus.HALF_OPEN, id="interrupt: still"
        ),
    ],
)
def test_the_trial_iteration_closes_or_reopens_the_breaker(trial, status):
    state = record(half_open(), trial, RECOVERING, T0 + 10_001)
    assert state.status is status


def test_a_failed_trial_reopens_with_a_fresh_cooldown():
    state = record(half_open(), failed(6), RECOVERING, T0 + 10_001)
    assert state.reason.startswith("the trial iteration failed: 6 failed iterations in a row")
    assert state.trips == 2
    assert state.opened_at == T0 + 10_001
    assert check(state, RECOVERING, T0 + 10_002).until == T0 + 10_001 + 1800


def test_a_no_progress_trip_needs_progress_to_close():
    config = RECOVERING
    state = check(run([stalled(n) for n in range(3)], config), config, T0 + 10_000).state
    assert record(state, stalled(4), config, T0 + 10_001).status is BreakerStatus.OPEN
    closed = record(state, progress(4), config, T0 + 10_001)
    assert closed.status is BreakerStatus.CLOSED
    assert closed.reason == "the trial iteration went well"
    assert closed.opened_at is None
    assert closed.cause is None


@pytest.mark.parametrize(
    ("trips", "config", "trial", "reason"),
    [
        pytest.param(
            [failed(n, "a") for n in range(5)],
            BreakerConfig(max_consecutive_errors=None, auto_recover=True),
            failed(6, "b"),
            "the trial iteration failed: it failed too (b)",
            id="another error, though not the same one",
        ),
        pytest.param(
            [denied(1), denied(2)],
            BreakerConfig(no_progress_threshold=None, auto_recover=True),
            stalled(3),
            "the trial iteration failed: it made no progress either",
            id="no denial, but no progress either",
        ),
    ],
)
def test_a_trial_must_fix_what_tripped_the_breaker(trips, config, trial, reason):
    state = check(run(trips, config), config, T0 + 10_000).state
    reopened = record(state, trial, config, T0 + 10_001)
    assert reopened.status is BreakerStatus.OPEN
    assert reopened.reason == reason
    assert reopened.cause is state.cause


def test_an_iteration_recorded_while_open_is_judged_like_a_trial():
    assert record(tripped(), progress(6), RECOVERING, T0 + 5).status is BreakerStatus.CLOSED


# --- manual control -----------------------------------------------------------------------


def test_reset_closes_and_clears_the_streaks_but_keeps_the_record():
    state = reset(tripped(), DEFAULTS, T0 + 20)
    assert state.status is BreakerStatus.CLOSED
    assert (state.consecutive_errors, state.same_error, state.no_progress, state.denials) == (
        0,
        0,
        0,
        0,
    )
    assert state.trips == 1
    assert state.history[-1].reason == "reset by the user"
    assert len(state.history) == 2


def test_allow_trial_gives_a_resumed_loop_one_trial():
    state = allow_trial(tripped(DEFAULTS), DEFAULTS, T0 + 20, reason="resumed by the user")
    assert state.status is BreakerStatus.HALF_OPEN
    assert check(state, DEFAULTS, T0 + 20).action is BreakerAction.RUN
    assert record(state, failed(6), DEFAULTS, T0 + 21).status is BreakerStatus.OPEN
    closed = BreakerState()
    assert allow_trial(closed, DEFAULTS, T0) is closed


@pytest.mark.parametrize(
    ("outcomes", "warning"),
    [
        ([stalled(1), stalled(2)], "2 iterations in a row made no progress"),
        ([failed(n, str(n)) for n in range(4)], "4 iterations in a row failed"),
        ([denied(1)], "1 iterations in a row hit denials"),
    ],
)
def test_near_trip_warns_one_iteration_before_a_trip(outcomes, warning):
    warnings = near_trip(run(outcomes), DEFAULTS)
    assert warnings == (f"{warning}; one more stops the loop (circuit breaker)",)


def test_near_trip_is_quiet_when_nothing_is_close_or_the_breaker_is_open():
    assert near_trip(run([stalled(1)]), DEFAULTS) == ()
    assert near_trip(tripped(), RECOVERING) == ()


# --- persistence --------------------------------------------------------------------------


def test_the_state_survives_a_json_round_trip():
    state = record(half_open(), failed(6), RECOVERING, T0 + 10_001)
    stored = json.loads(json.dumps(to_dict(state)))
    assert from_dict(stored) == state


def test_a_restart_in_the_middle_of_a_cooldown_keeps_waiting_until_the_same_time():
    before = tripped()
    restored = from_dict(json.loads(json.dumps(to_dict(before))))
    verdict = check(restored, RECOVERING, T0 + 900)
    assert verdict.action is BreakerAction.WAIT
    assert verdict.until == T0 + 4 + 1800
    assert check(restored, RECOVERING, T0 + 4 + 1800).state.status is BreakerStatus.HALF_OPEN


def test_an_empty_dict_is_a_fresh_breaker():
    assert from_dict({}) == BreakerState()


@pytest.mark.parametrize(
    "stored",
    [
        {"status": "ajar"},
        {"cause": "bad luck"},
        {"consecutive_errors": "3"},
        {"consecutive_errors": True},
        {"opened_at": "yesterday"},
        {"denied_tools": ["Write", 3]},
        {"history": "none"},
        {"history": [42]},
        {"history": [{"at": 1.0, "from": "closed", "to": "sideways", "reason": ""}]},
    ],
)
def test_a_corrupt_state_is_rejected_with_a_clear_error(stored):
    with pytest.raises(ValueError, match="breaker state"):
        from_dict(stored)


def test_the_history_is_bounded():
    config = BreakerConfig(no_progress_threshold=1, history_limit=3, auto_recover=True)
    state = BreakerState()
    for n in range(10):
        state = record(state, stalled(n), config, T0 + n)
        state = check(state, replace(config, cooldown_s=0), T0 + n).state
    assert len(state.history) == 3
    assert state.trips == 10


outcomes = st.builds(
    IterationOutcome,
    iteration=st.integers(0, 1000),
    errored=st.booleans(),
    error_signature=st.sampled_from([None, "a", "b"]),
    progressed=st.booleans(),
    denied_tools=st.sampled_from([(), ("Bash",), ("Write", "Bash")]),
    interrupted=st.booleans(),
    usage_limited=st.booleans(),
)


@settings(deadline=None, max_examples=200)
@given(st.lists(outcomes, max_size=30), st.booleans())
def test_any_sequence_gives_a_consistent_state_that_round_trips(steps, auto_recover):
    config = BreakerConfig(auto_recover=auto_recover, cooldown_s=5, history_limit=8)
    state = BreakerState()
    now = T0
    for outcome in steps:
        verdict = check(state, config, now)
        if verdict.action is BreakerAction.TRIP:
            assert state.status is BreakerStatus.OPEN
            break
        state = verdict.state
        if verdict.action is BreakerAction.WAIT:
            assert verdict.until is not None
            now = verdict.until
            continue
        state = record(state, outcome, config, now)
        now += 1
    if state.status is BreakerStatus.CLOSED:
        assert (state.opened_at, state.cause) == (None, None)
    if state.status is BreakerStatus.OPEN:
        assert state.opened_at is not None
        assert state.cause is not None
    assert len(state.history) <= config.history_limit
    assert from_dict(json.loads(json.dumps(to_dict(state)))) == state


# --- configuration and error signatures ---------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_consecutive_errors": 0},
        {"same_error_threshold": -1},
        {"no_progress_threshold": 0},
        {"permission_denial_threshold": 0},
        {"cooldown_s": -1},
        {"history_limit": 0},
    ],
)
def test_nonsensical_thresholds_are_refused(kwargs):
    with pytest.raises(ValueError, match=r"must be|cannot be"):
        BreakerConfig(**kwargs)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (
            "API Error: 529 Overloaded. check your gateway (127.0.0.1:42191).",
            "API Error: 529 Overloaded. check your gateway (127.0.0.1:50007).",
        ),
        (
            "no result line (exit code 1); stderr tail: /tmp/ralph-abc123/x.py line 12",
            "no result line (exit code 1); stderr tail: /tmp/ralph-zz9/x.py line 40",
        ),
        (
            "session 0b7c2a8e-1d2f-4c3b-9a8e-7f6d5c4b3a21 failed at 2026-11-21T23:34:41.858Z",
            "session 11111111-2222-4333-8444-555555555555 failed at 2026-11-22T01:02:03Z",
        ),
        (
            "request req_011CaJuMubY2SuiToByp4MH4 failed",
            "request req_011CTrmdPsD7d9uz7LstkY5g failed",
        ),
        ("object deadbeef1234 missing", "object 0123abcdef99 missing"),
        ("see https://a.example/x?id=1", "see https://b.example/y?id=2"),
        ("C:\\work\\a.py broke", "C:\\work\\b.py broke"),
    ],
)
def test_error_signatures_ignore_volatile_details(first, second):
    assert error_signature("crash", first) == error_signature("crash", second)


def test_error_signatures_keep_the_class_and_the_words():
    assert error_signature("timeout", "killed after 3600s") == "timeout: killed after <n>s"
    assert error_signature("crash", "boom") != error_signature("agent_exit", "boom")
    assert error_signature("crash", None) == "crash:"
    assert len(error_signature("crash", "word " * 10_000)) <= 300
