"""Calls per hour: the pure rule, then the limits read from the store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ralphctl.engine.ratelimit import calls_wait, next_allowed
from ralphctl.store.records import IterationRecord
from ralphctl.store.repository import Store
from tests.store.factories import new_loop

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def ago(minutes: float) -> datetime:
    return NOW - timedelta(minutes=minutes)


@pytest.mark.parametrize(
    ("starts_minutes_ago", "limit", "allowed_in_minutes"),
    [
        ([], 3, None),
        ([50, 10], None, None),  # no limit
        ([50, 10], 3, None),  # under the limit
        ([50, 30, 10], 3, 10),  # at the limit: when the oldest leaves
        ([10, 50, 30], 3, 10),  # in any order
        ([90, 61, 50, 30, 10], 3, 10),  # calls older than the window do not count
        ([60, 30, 10], 3, None),  # exactly an hour ago: already out
        ([55, 50, 30, 10], 3, 10),  # over the limit (it was lowered): two must leave
        ([5], 1, 55),
    ],
)
def test_next_allowed(starts_minutes_ago, limit, allowed_in_minutes):
    starts = [ago(m) for m in starts_minutes_ago]
    expected = None if allowed_in_minutes is None else NOW + timedelta(minutes=allowed_in_minutes)

    assert next_allowed(starts, limit, NOW) == expected


def test_next_allowed_with_a_shorter_window():
    starts = [NOW - timedelta(seconds=s) for s in (50, 20)]

    assert next_allowed(starts, 2, NOW, window_s=60) == NOW + timedelta(seconds=10)


def test_a_limit_below_one_is_a_mistake():
    with pytest.raises(ValueError, match="at least 1"):
        next_allowed([], 0, NOW)


def start(store: Store, loop_id: str, n: int, minutes_ago: float) -> None:
    store.begin_iteration(IterationRecord(loop_id=loop_id, n=n, started_at=ago(minutes_ago)))


@pytest.fixture
def loops(store: Store) -> Store:
    """Loop ``a`` made three calls in the last hour (and one before), loop ``b`` two."""
    store.create_loop(new_loop("loop-a"))
    store.create_loop(new_loop("loop-b"))
    for n, minutes_ago in enumerate([70, 45, 30, 20], start=1):
        start(store, "loop-a", n, minutes_ago)
    for n, minutes_ago in enumerate([50, 5], start=1):
        start(store, "loop-b", n, minutes_ago)
    return store


def test_no_limits_means_no_wait(loops: Store) -> None:
    assert calls_wait(loops, "loop-a", per_loop=None, global_=None, now=NOW) is None


def test_under_both_limits_means_no_wait(loops: Store) -> None:
    assert calls_wait(loops, "loop-a", per_loop=4, global_=6, now=NOW) is None


def test_the_per_loop_limit_counts_only_the_loops_own_calls(loops: Store) -> None:
    assert calls_wait(loops, "loop-a", per_loop=3, global_=None, now=NOW) == (
        NOW + timedelta(minutes=15),
        "3 agent calls in the last hour (limit 3 per loop)",
    )
    assert calls_wait(loops, "loop-b", per_loop=3, global_=None, now=NOW) is None


def test_the_global_limit_counts_the_calls_of_every_loop(loops: Store) -> None:
    assert calls_wait(loops, "loop-b", per_loop=None, global_=5, now=NOW) == (
        NOW + timedelta(minutes=10),
        "5 agent calls in the last hour (limit 5 across loops)",
    )


def test_when_both_limits_are_reached_the_later_moment_wins(loops: Store) -> None:
    assert calls_wait(loops, "loop-a", per_loop=3, global_=5, now=NOW) == (
        NOW + timedelta(minutes=15),  # the global limit alone would wait 10 minutes
        "3 agent calls in the last hour (limit 3 per loop)",
    )
    assert calls_wait(loops, "loop-a", per_loop=3, global_=2, now=NOW) == (
        NOW + timedelta(minutes=40),  # three of the five calls must leave the window
        "5 agent calls in the last hour (limit 2 across loops)",
    )
