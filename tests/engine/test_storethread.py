"""Store calls run on the store's own thread, in order, while the event loop goes on."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralphctl.engine import storethread
from ralphctl.store.errors import StoreError
from ralphctl.store.repository import Store

SLOW_CALL_S = 0.5


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(str(tmp_path / "ralphctl.db")) as opened:
        yield opened


def test_store_calls_run_one_at_a_time_in_the_order_they_were_queued(store):
    ran: list[tuple[int, str]] = []

    def call(n: int) -> int:
        ran.append((n, threading.current_thread().name))
        time.sleep(0.01 * (5 - n))  # the first ones take longest: a pool would finish them last
        return n

    async def scenario() -> list[int]:
        futures = [storethread.submit(store, call, n) for n in range(5)]
        finished: list[int] = []
        for future in futures:
            future.add_done_callback(lambda done: finished.append(done.result()))
        await asyncio.gather(*futures)
        return finished

    finished = asyncio.run(scenario())

    assert finished == [0, 1, 2, 3, 4]
    assert [n for n, _ in ran] == [0, 1, 2, 3, 4]
    assert len({thread for _, thread in ran}) == 1
    assert ran[0][1] != threading.main_thread().name


def test_the_event_loop_runs_on_while_a_store_call_waits(store):
    async def scenario() -> tuple[float, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        started = time.monotonic()
        await storethread.run(store, time.sleep, SLOW_CALL_S)
        ticker.cancel()
        return time.monotonic() - started, ticks

    waited, ticks = asyncio.run(scenario())

    assert waited >= SLOW_CALL_S
    assert ticks >= 10  # it ticked every 10 ms meanwhile, not once at the end


def test_a_failing_store_call_raises_its_error_in_the_caller(store):
    def fails() -> None:
        raise StoreError("cannot record iteration 1: database is locked")

    async def scenario() -> None:
        await storethread.run(store, fails)

    with pytest.raises(StoreError, match="database is locked"):
        asyncio.run(scenario())


def test_each_store_has_a_thread_of_its_own(store, tmp_path):
    other = Store.open(str(tmp_path / "other.db"))

    async def scenario() -> tuple[int, int]:
        return (
            await storethread.run(store, threading.get_ident),
            await storethread.run(other, threading.get_ident),
        )

    try:
        first, second = asyncio.run(scenario())
    finally:
        other.close()

    assert first != second


def test_a_delivered_result_reaches_the_event_loop_a_turn_before_the_awaiting_coroutine(store):
    """Events are published from the store's thread in one hop: awaiting the write and then
    publishing took two turns of the event loop, each long on a busy server."""
    turns = 0
    seen: list[tuple[str, int]] = []

    def slow_write() -> str:
        time.sleep(0.05)
        return "stored"

    async def scenario() -> None:
        async def count_turns() -> None:
            nonlocal turns
            while True:
                await asyncio.sleep(0)
                turns += 1

        counter = asyncio.create_task(count_turns())
        await asyncio.sleep(0)
        stored = storethread.submit_delivering(
            store, lambda result: seen.append((result, turns)), slow_write
        )
        await stored
        seen.append(("resumed", turns))
        counter.cancel()

    asyncio.run(scenario())

    (delivered, delivered_at), (resumed, resumed_at) = seen
    assert (delivered, resumed) == ("stored", "resumed")
    assert delivered_at < resumed_at


def test_delivered_results_come_in_the_order_the_calls_ran(store):
    delivered: list[int] = []

    def call(n: int) -> int:
        time.sleep(0.01 * (5 - n))
        return n

    async def scenario() -> list[int]:
        futures = [
            storethread.submit_delivering(store, delivered.append, call, n) for n in range(5)
        ]
        return list(await asyncio.gather(*futures))

    assert asyncio.run(scenario()) == [0, 1, 2, 3, 4]
    assert delivered == [0, 1, 2, 3, 4]


def test_nothing_is_delivered_when_the_store_call_fails(store):
    delivered: list[object] = []

    def fails() -> None:
        raise StoreError("cannot append an event: database is locked")

    async def scenario() -> None:
        await storethread.submit_delivering(store, delivered.append, fails)

    with pytest.raises(StoreError, match="database is locked"):
        asyncio.run(scenario())
    assert delivered == []
