"""Live events from a manager running several loops at once."""

from __future__ import annotations

import asyncio

from ralphctl.engine.manager import LoopManager
from ralphctl.store.records import EventRecord, LoopRecord
from tests.manager.conftest import DONE, run, spec, until

WORKING = {"text": "working", "cost_usd": 0.01}


def test_a_subscriber_sees_every_stored_event_once_in_seq_order(db, new_workdir):
    async def scenario() -> tuple[list[LoopRecord], list[EventRecord]]:
        manager = LoopManager(db, max_concurrent=2)
        await manager.start()
        subscription = manager.subscribe()
        loops = [
            await manager.create(spec(new_workdir(), WORKING, WORKING, DONE)) for _ in range(3)
        ]
        await until(lambda: not manager.running_ids and not manager.queued_ids)
        await manager.close()
        return loops, [event async for event in subscription]

    loops, seen = run(scenario())
    stored = db.events_since(0)
    assert [e.seq for e in seen] == [e.seq for e in stored]
    assert seen == stored
    for loop in loops:
        types = [e.event_type for e in seen if e.loop_id == loop.id]
        assert types[:2] == ["created", "started"]
        assert types[-1] == "completed"
        assert types.count("iteration_completed") == 3


def test_a_subscriber_that_does_not_read_is_dropped_not_buffered(db, new_workdir):
    async def scenario() -> tuple[bool, list[EventRecord], list[EventRecord]]:
        manager = LoopManager(db)
        await manager.start()
        slow = manager.subscribe(max_queue=5)
        reader = manager.subscribe()
        received = []

        async def read() -> None:
            async for event in reader:
                received.append(event)

        reading = asyncio.create_task(read())
        loop = await manager.create(spec(new_workdir(), WORKING, WORKING, DONE))
        await until(lambda: loop.id not in manager.running_ids)
        dropped = slow.dropped
        leftovers = [event async for event in slow]
        await manager.close()
        await reading
        return dropped, leftovers, received

    dropped, leftovers, received = run(scenario())
    assert dropped
    assert leftovers == []
    assert received == db.events_since(0)
