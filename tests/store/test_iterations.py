"""Iterations: begun, completed together with the loop totals, interrupted after a crash."""

from __future__ import annotations

import dataclasses

import pytest

from ralphctl.domain.states import LoopStatus
from ralphctl.store.repository import Store, StoreError
from tests.store.factories import PLUS_TWO, T0, finished_iteration, new_loop, started_iteration

PLUS_TWO_T0 = T0.astimezone(PLUS_TWO)  # the same instant


@pytest.fixture
def running(store: Store) -> str:
    return store.create_loop(new_loop("loop-run", status=LoopStatus.RUNNING)).id


def test_a_begun_iteration_is_stored_as_running(store: Store, running: str) -> None:
    store.begin_iteration(dataclasses.replace(started_iteration(running, 1), status="ok"))

    assert store.iterations(running) == [started_iteration(running, 1)]


def test_beginning_stores_the_start_events_in_the_same_transaction(
    store: Store, running: str
) -> None:
    started = store.begin_iteration(
        started_iteration(running, 1), [("iteration_started", {"iteration": 1})]
    )

    assert [(e.event_type, e.data) for e in started] == [("iteration_started", {"iteration": 1})]
    assert store.events_since(0, loop_id=running) == started
    with pytest.raises(StoreError):  # the same iteration again: neither row nor event is added
        store.begin_iteration(started_iteration(running, 1), [("iteration_started", {})])
    assert store.events_since(0, loop_id=running) == started


def test_a_completed_iteration_reads_back_exactly(store: Store, running: str) -> None:
    store.begin_iteration(started_iteration(running, 1))

    store.complete_iteration(finished_iteration(running, 1), new_loop(running, iteration=1))

    assert store.iterations(running) == [finished_iteration(running, 1)]


def test_completing_also_saves_the_loop_totals(store: Store, running: str) -> None:
    store.begin_iteration(started_iteration(running, 1))
    totals = new_loop(running, status=LoopStatus.RUNNING, iteration=1, cost_usd=0.0125)

    store.complete_iteration(finished_iteration(running, 1), totals)

    loop = store.get_loop(running)
    assert (loop.iteration, loop.cost_usd) == (1, 0.0125)


def test_a_failed_completion_changes_neither_iteration_nor_loop(store: Store, running: str) -> None:
    store.begin_iteration(started_iteration(running, 1))
    before = store.get_loop(running)
    unstorable = new_loop(running, iteration=1, cost_usd=9.0, config={"bad": object()})

    with pytest.raises(StoreError, match="cannot record iteration 1"):
        store.complete_iteration(finished_iteration(running, 1), unstorable)

    assert store.iterations(running) == [started_iteration(running, 1)]
    assert store.get_loop(running) == before


def test_iterations_are_listed_in_order(store: Store, running: str) -> None:
    for n in (3, 1, 2):
        store.begin_iteration(started_iteration(running, n))

    assert [it.n for it in store.iterations(running)] == [1, 2, 3]


def test_an_iteration_number_cannot_be_begun_twice(store: Store, running: str) -> None:
    store.begin_iteration(started_iteration(running, 1))

    with pytest.raises(StoreError, match="cannot record the start of iteration 1"):
        store.begin_iteration(started_iteration(running, 1))


def test_an_iteration_needs_an_existing_loop(store: Store) -> None:
    with pytest.raises(StoreError):
        store.begin_iteration(started_iteration("loop-ghost", 1))


def test_an_iteration_that_was_never_begun_cannot_be_completed(store: Store, running: str) -> None:
    with pytest.raises(StoreError, match="iteration 4 of loop 'loop-run' was never begun"):
        store.complete_iteration(finished_iteration(running, 4), new_loop(running))


def test_an_iteration_is_completed_with_its_own_loop(store: Store, running: str) -> None:
    with pytest.raises(ValueError, match="given with loop 'other'"):
        store.complete_iteration(finished_iteration(running, 1), new_loop("other"))


def test_iterations_left_running_are_marked_interrupted(store: Store, running: str) -> None:
    store.begin_iteration(started_iteration(running, 1))
    store.complete_iteration(finished_iteration(running, 1), new_loop(running, iteration=1))
    store.begin_iteration(started_iteration(running, 2))

    assert store.interrupt_running_iterations(running) == [2]

    first, second = store.iterations(running)
    assert first == finished_iteration(running, 1)
    assert second.status == "interrupted"
    assert second.completed_at is not None
    assert second.error_message == ("interrupted: the runner stopped before the iteration finished")
    assert store.interrupt_running_iterations(running) == []


def test_running_iterations_are_those_left_running_with_their_agents(
    store: Store, running: str
) -> None:
    store.begin_iteration(started_iteration(running, 1))
    store.complete_iteration(finished_iteration(running, 1), new_loop(running, iteration=1))
    store.begin_iteration(started_iteration(running, 2))
    store.set_iteration_agent(running, 2, 4321, PLUS_TWO_T0)

    assert store.running_iterations(running) == [
        dataclasses.replace(started_iteration(running, 2), agent_pid=4321, agent_started_at=T0)
    ]
    assert store.running_iterations("loop-unknown") == []


def test_interrupted_iterations_may_say_what_became_of_their_agents(
    store: Store, running: str
) -> None:
    for n in (1, 2):
        store.begin_iteration(started_iteration(running, n))

    notes = {2: "its agent (pid 4321) had already exited", 7: "not running: ignored"}
    assert store.interrupt_running_iterations(running, notes) == [1, 2]

    messages = [it.error_message for it in store.iterations(running)]
    assert messages == [
        "interrupted: the runner stopped before the iteration finished",
        "interrupted: the runner stopped before the iteration finished; "
        "its agent (pid 4321) had already exited",
    ]


def test_interrupting_touches_only_the_given_loop(store: Store, running: str) -> None:
    store.create_loop(new_loop("loop-other"))
    store.begin_iteration(started_iteration("loop-other", 1))

    assert store.interrupt_running_iterations(running) == []
    assert store.iterations("loop-other")[0].status == "running"


def test_iteration_starts_since_a_moment_per_loop_or_for_all_loops(
    store: Store, running: str
) -> None:
    store.create_loop(new_loop("loop-other"))
    for loop_id, n in [(running, 1), (running, 2), ("loop-other", 3), (running, 4)]:
        store.begin_iteration(started_iteration(loop_id, n))
    since = started_iteration(running, 2).started_at.astimezone(PLUS_TWO)  # the same instant

    assert store.iteration_starts_since(since, running) == [
        started_iteration(running, 2).started_at,
        started_iteration(running, 4).started_at,
    ]
    assert store.iteration_starts_since(since) == [
        started_iteration(running, n).started_at for n in (2, 3, 4)
    ]
    assert store.iteration_starts_since(since, "loop-unknown") == []
