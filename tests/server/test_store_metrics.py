"""The metrics queries give the same answers on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from ralphctl.domain.states import LoopStatus
from ralphctl.store import metrics
from ralphctl.store.repository import Store
from tests.store.factories import T0, finished_iteration, new_loop


def _loop_with_iterations(store: Store, loop_id: str, costs: list[float], **changes) -> None:
    loop = store.create_loop(new_loop(loop_id, **changes))
    for n, cost in enumerate(costs, start=1):
        done = replace(finished_iteration(loop_id, n), cost_usd=cost)
        store.begin_iteration(done)
        loop = replace(loop, iteration=n, cost_usd=loop.cost_usd + cost)
        store.complete_iteration(done, loop)


def test_cost_per_loop_sums_iterations_most_expensive_first(store: Store) -> None:
    _loop_with_iterations(store, "cheap", [0.25, 0.25])
    _loop_with_iterations(store, "dear", [1.0, 2.0, 0.5])
    store.create_loop(new_loop("idle"))

    rows = metrics.cost_per_loop(store)

    assert [(r.loop_id, r.iterations, r.cost_usd) for r in rows] == [
        ("dear", 3, 3.5),
        ("cheap", 2, 0.5),
        ("idle", 0, 0.0),
    ]


def test_average_iterations_counts_completed_loops_only(store: Store) -> None:
    _loop_with_iterations(store, "a", [0.1] * 2, status=LoopStatus.COMPLETED)
    _loop_with_iterations(store, "b", [0.1] * 5, status=LoopStatus.COMPLETED)
    _loop_with_iterations(store, "c", [0.1] * 9, status=LoopStatus.STOPPED)

    assert metrics.iterations_to_completion(store) == metrics.Completion(2, 3.5)


def test_average_iterations_is_none_before_any_completion(store: Store) -> None:
    assert metrics.iterations_to_completion(store) == metrics.Completion(0, None)


def test_cost_by_hour_groups_by_the_utc_hour_an_iteration_started(store: Store) -> None:
    # finished_iteration(n) starts at T0 + n minutes; T0 is 12:00:00 UTC.
    _loop_with_iterations(store, "a", [0.5] * 3)
    loop = store.get_loop("a")
    late = replace(finished_iteration("a", 4), started_at=T0 + timedelta(hours=2), cost_usd=1.5)
    store.begin_iteration(late)
    store.complete_iteration(late, replace(loop, iteration=4))

    rows = metrics.cost_by_hour(store, since=T0)

    assert rows == [
        metrics.HourCost("2026-03-01T12:00:00Z", 3, 1.5),
        metrics.HourCost("2026-03-01T14:00:00Z", 1, 1.5),
    ]
    assert metrics.cost_by_hour(store, since=T0 + timedelta(hours=1)) == rows[1:]


def test_totals_count_by_status_and_sum_the_loops(store: Store) -> None:
    _loop_with_iterations(store, "a", [0.5, 0.25], status=LoopStatus.RUNNING)
    store.create_loop(new_loop("b"))
    event = store.append_event("a", "tick", {})

    totals = metrics.totals(store)

    assert totals.loops_by_status == {"running": 1, "pending": 1}
    assert totals.iterations_by_status == {"ok": 2}
    assert totals.cost_usd == 0.75
    assert totals.last_seq == event.seq == metrics.last_event_seq(store)


def test_last_event_seq_is_zero_on_an_empty_store(store: Store) -> None:
    assert metrics.last_event_seq(store) == 0
