"""Bounded event history: the newest events of each loop are kept, older ones deleted."""

from __future__ import annotations

import asyncio

import pytest

from ralphctl.domain.states import LoopStatus
from ralphctl.engine.manager import LoopManager
from ralphctl.store.retention import prune_events
from tests.manager.conftest import until
from tests.store.factories import new_loop


def test_each_loop_keeps_its_newest_events(store):
    for loop_id in ("loop-a", "loop-b", "loop-c"):
        store.create_loop(new_loop(loop_id))
    store.append_events("loop-a", [("warning", {"n": n}) for n in range(10)])
    store.append_events("loop-b", [("warning", {"n": n}) for n in range(3)])
    store.append_events("loop-c", [("warning", {"n": n}) for n in range(4)])

    assert prune_events(store, keep=4) == 6
    assert [e.data["n"] for e in store.events_since(0, loop_id="loop-a")] == [6, 7, 8, 9]
    assert len(store.events_since(0, loop_id="loop-b")) == 3
    assert len(store.events_since(0, loop_id="loop-c")) == 4
    assert prune_events(store, keep=4) == 0


def test_keeping_nothing_is_refused(store):
    with pytest.raises(ValueError, match="keep must be >= 1"):
        prune_events(store, keep=0)


def test_the_manager_trims_the_history_when_it_starts_and_then_periodically(db):
    db.create_loop(new_loop("loop-a", status=LoopStatus.COMPLETED))
    db.append_events("loop-a", [("warning", {"n": n}) for n in range(300)])

    def numbers() -> list[int]:
        return [e.data["n"] for e in db.events_since(0, loop_id="loop-a")]

    async def scenario() -> tuple[list[int], list[int]]:
        manager = LoopManager(db, event_retention=100, retention_interval_s=0.01)
        await manager.start()
        await until(lambda: len(numbers()) == 100)
        at_start = numbers()
        db.append_events("loop-a", [("warning", {"n": n}) for n in range(300, 350)])
        await until(lambda: len(numbers()) == 100)
        await manager.close()
        return at_start, numbers()

    at_start, later = asyncio.run(scenario())
    assert at_start == list(range(200, 300))
    assert later == list(range(250, 350))
