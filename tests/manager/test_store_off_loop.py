"""The manager's event loop never waits on the database: store calls run on the store's thread
(``engine/storethread``). Under a foreign SQLite write lock, held beyond the busy timeout while
loops of either mode run, the event loop keeps its pace; once the lock is gone the loops go on
(fresh) or end visibly (hook mode, whose session ended with its runner). Events from loops of
both modes running together still reach subscribers in seq order."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.engine import storefailure
from ralphctl.engine.manager import LoopManager
from ralphctl.store import sqlite_direct
from ralphctl.store.records import EventRecord, LoopRecord
from ralphctl.store.repository import Store
from tests.manager.conftest import DONE, run, spec, until
from tests.manager.test_hook_loops import hook_spec

BUSY_TIMEOUT_S = 1.0  # shortened for these tests (5 s in store/sqlite_direct.py)
HELD_S = 5.0  # the slow iteration, then its transcript and its record each time out
TICK_S = 0.02
STEADY_GAP_S = 0.5  # the longest pause between two ticks: under half the busy timeout
QUICK = {"text": "working", "cost_usd": 0.01}
SLOW = {"text": "working slowly", "sleep_s": 1.5, "cost_usd": 0.01}


@pytest.fixture
def short_busy_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    monkeypatch.setattr(sqlite_direct, "BUSY_TIMEOUT_S", BUSY_TIMEOUT_S)
    monkeypatch.setattr(storefailure, "RETRY_DELAYS_S", (0.2, 0.5))
    with Store.open(str(tmp_path / "locked.db")) as opened:
        yield opened


class Ticker:
    """Ticks on the event loop every ``TICK_S``; ``longest_gap_s`` is its longest pause."""

    def __init__(self) -> None:
        self.longest_gap_s = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(TICK_S)
            now = time.monotonic()
            self.longest_gap_s = max(self.longest_gap_s, now - last)
            last = now

    def __enter__(self) -> Ticker:
        self._task = asyncio.create_task(self._tick())
        return self

    def __exit__(self, *_exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


async def hold_write_lock(db: Path, seconds: float) -> None:
    """Another connection holds the database's write lock for ``seconds``."""
    foreign = sqlite3.connect(db, isolation_level=None)
    foreign.execute("BEGIN IMMEDIATE")
    try:
        await asyncio.sleep(seconds)
    finally:
        foreign.execute("ROLLBACK")
        foreign.close()


def iteration_running(store: Store, loop_id: str, n: int) -> bool:
    return any(it.n == n and it.status == "running" for it in store.iterations(loop_id))


def test_a_fresh_loop_under_a_foreign_write_lock_leaves_the_event_loop_free_and_resumes(
    short_busy_store, tmp_path, new_workdir
):
    store = short_busy_store

    async def scenario() -> tuple[float, LoopRecord]:
        manager = LoopManager(store)
        await manager.start()
        loop = await manager.create(spec(new_workdir(), QUICK, SLOW, DONE))
        await until(lambda: iteration_running(store, loop.id, 2))
        with Ticker() as ticker:
            await hold_write_lock(tmp_path / "locked.db", HELD_S)
            await until(lambda: store.get_loop(loop.id).status is LoopStatus.COMPLETED)
        await manager.close()
        return ticker.longest_gap_s, store.get_loop(loop.id)

    longest_gap_s, final = run(scenario())

    print(f"\nlongest event-loop pause under the lock (fresh): {longest_gap_s:.3f} s")
    assert longest_gap_s < STEADY_GAP_S
    assert final.stop_reason is StopReason.COMPLETION
    iterations = store.iterations(final.id)
    # the refused record of iteration 2 was kept in the loop's journal and recorded on resume
    assert [it.status for it in iterations] == ["ok", "ok", "ok"]
    assert final.cost_usd == pytest.approx(sum(it.cost_usd or 0.0 for it in iterations))


def test_a_hook_mode_loop_under_a_foreign_write_lock_leaves_the_event_loop_free_and_stops(
    short_busy_store, tmp_path, new_workdir, fake_claude
):
    store = short_busy_store
    fake_claude([{"text": "one"}, {"text": "two", "sleep_s": 1.0}, {"text": "three"}])

    async def scenario() -> tuple[float, LoopRecord]:
        manager = LoopManager(store)
        await manager.start()
        loop = await manager.create(hook_spec(new_workdir(), max_iterations=5))
        await until(lambda: iteration_running(store, loop.id, 2))
        with Ticker() as ticker:
            await hold_write_lock(tmp_path / "locked.db", HELD_S)
            await until(lambda: loop.id not in manager.running_ids)
            await until(lambda: not store.get_loop(loop.id).status.is_active)
        await manager.close()
        return ticker.longest_gap_s, store.get_loop(loop.id)

    longest_gap_s, final = run(scenario())

    print(f"\nlongest event-loop pause under the lock (hook mode): {longest_gap_s:.3f} s")
    assert longest_gap_s < STEADY_GAP_S
    assert (final.status, final.stop_reason) == (LoopStatus.STOPPED, StopReason.INTERRUPTED)
    assert (final.stop_detail or "").startswith("the database failed: ")


def test_fresh_and_hook_mode_loops_running_together_publish_their_events_in_seq_order(
    db, new_workdir, fake_claude
):
    fake_claude([{"text": "one"}, {"text": "two"}, {"text": "three"}])

    async def scenario() -> list[EventRecord]:
        manager = LoopManager(db)
        await manager.start()
        subscription = manager.subscribe()
        await manager.create(hook_spec(new_workdir(), max_iterations=3))
        await manager.create(spec(new_workdir(), QUICK, QUICK, DONE))
        await until(lambda: not manager.running_ids)
        await manager.close()
        return [event async for event in subscription]

    seen = run(scenario())

    assert [e.seq for e in seen] == [e.seq for e in db.events_since(0)]
    assert {e.data.get("iteration") for e in seen if e.event_type == "iteration_completed"} == {
        1,
        2,
        3,
    }
