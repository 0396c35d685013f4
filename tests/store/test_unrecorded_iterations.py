"""Iterations the store refused once, recorded later from the runner's journal: exactly once."""

from __future__ import annotations

import pytest

from ralphctl.domain.states import LoopStatus
from ralphctl.store.repository import Store
from tests.store.factories import finished_iteration, new_loop, started_iteration

STARTED = ("iteration_started", {"iteration": 2})
COMPLETED = ("iteration_completed", {"iteration": 2})


@pytest.fixture
def running(store: Store) -> str:
    loop = new_loop("loop-kept", status=LoopStatus.RUNNING, iteration=1, cost_usd=1.0)
    return store.create_loop(loop).id


def test_a_finished_iteration_never_stored_is_added_and_grows_the_loop(
    store: Store, running: str
) -> None:
    done = finished_iteration(running, 2)

    stored = store.record_unrecorded(done, [STARTED, COMPLETED])

    assert [event.event_type for event in stored or []] == [
        "iteration_started",
        "iteration_completed",
    ]
    assert store.iterations(running) == [done]
    loop = store.get_loop(running)
    assert loop.iteration == 2
    assert loop.cost_usd == pytest.approx(1.0 + (done.cost_usd or 0.0))
    assert loop.tokens_input == done.tokens_input


def test_a_finished_iteration_replaces_its_running_row(store: Store, running: str) -> None:
    store.begin_iteration(started_iteration(running, 2))
    done = finished_iteration(running, 2)

    store.record_unrecorded(done, [COMPLETED])

    assert store.iterations(running) == [done]
    assert store.running_iterations(running) == []


def test_an_iteration_recorded_already_is_skipped_and_counted_once(
    store: Store, running: str
) -> None:
    done = finished_iteration(running, 2)
    store.record_unrecorded(done, [COMPLETED])

    again = store.record_unrecorded(done, [COMPLETED])

    assert again is None
    assert store.get_loop(running).cost_usd == pytest.approx(1.0 + (done.cost_usd or 0.0))
    assert len(store.events_since(0, loop_id=running)) == 1


def test_an_iteration_only_begun_is_added_as_running_without_totals(
    store: Store, running: str
) -> None:
    store.record_unrecorded(started_iteration(running, 2), [STARTED])

    assert [(it.n, it.status) for it in store.running_iterations(running)] == [(2, "running")]
    assert (store.get_loop(running).iteration, store.get_loop(running).cost_usd) == (1, 1.0)
