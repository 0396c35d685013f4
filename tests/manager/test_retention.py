"""Bounded event history: the newest events of each loop are kept, older ones deleted."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from ralphctl.domain.states import LoopStatus
from ralphctl.engine.manager import LoopManager
from ralphctl.settings import LoopsSettings
from ralphctl.store.records import IterationRecord
from ralphctl.store.repository import Store
from ralphctl.store.retention import prune_events
from ralphctl.store.transcript_chunks import append_chunk, iter_transcript
from tests.manager.conftest import until
from tests.store.factories import finished_iteration, new_loop


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


def finished(db: Store, iteration: IterationRecord, output: bytes) -> None:
    """Iteration ``iteration`` of loop-a, recorded finished with ``output`` as its transcript."""
    db.begin_iteration(iteration)
    db.complete_iteration(iteration, replace(db.get_loop("loop-a"), iteration=iteration.n))
    append_chunk(db, "loop-a", iteration.n, 0, output)


def test_the_manager_deletes_expired_transcripts_periodically_even_when_idle(db):
    db.create_loop(new_loop("loop-a", status=LoopStatus.COMPLETED))
    finished(db, finished_iteration("loop-a", 1), b"old output")  # March: long expired
    recent = replace(finished_iteration("loop-a", 3), started_at=datetime.now(UTC))
    finished(db, recent, b"recent output")

    def kept(n: int) -> bytes:
        return b"".join(iter_transcript(db, "loop-a", n))

    async def scenario() -> None:
        manager = LoopManager(
            db, event_retention=None, transcript_retention_days=2, retention_interval_s=0.01
        )
        await manager.start()
        await until(lambda: kept(1) == b"")
        finished(db, finished_iteration("loop-a", 2), b"old output")  # while nothing runs
        await until(lambda: kept(2) == b"")
        await manager.close()

    asyncio.run(scenario())
    assert kept(3) == b"recent output"


def test_the_manager_takes_the_transcript_retention_from_the_loops_settings(db):
    settings = LoopsSettings(transcript_retention_days=30)

    assert LoopManager.from_settings(db, settings).transcript_retention_days == 30
    assert LoopManager.from_settings(db, LoopsSettings()).transcript_retention_days == 0
