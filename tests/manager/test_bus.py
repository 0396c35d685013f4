"""The event fan-out: every subscriber gets every event in order; a slow one is dropped."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from ralphctl.engine.bus import EventBus
from ralphctl.store.records import EventRecord


def event(seq: int) -> EventRecord:
    return EventRecord(seq, "loop", "iteration_completed", {"iteration": seq}, datetime.now(UTC))


async def collect(subscription) -> list[int]:
    return [e.seq async for e in subscription]


def test_every_subscriber_sees_every_event_in_the_order_published():
    async def scenario() -> tuple[list[int], list[int]]:
        bus = EventBus()
        first, second = bus.subscribe(), bus.subscribe()
        for seq in range(1, 6):
            bus.publish(event(seq))
        bus.close()
        return await collect(first), await collect(second)

    assert asyncio.run(scenario()) == ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5])


def test_a_subscriber_too_far_behind_is_dropped_and_its_backlog_freed():
    async def scenario() -> tuple[tuple[bool, int], list[int], list[int]]:
        bus = EventBus()
        slow, fast = bus.subscribe(max_queue=3), bus.subscribe(max_queue=100)
        for seq in range(1, 11):
            bus.publish(event(seq))
        dropped = slow.dropped, len(bus)
        bus.close()
        return dropped, await collect(slow), await collect(fast)

    (dropped, subscribers), slow_got, fast_got = asyncio.run(scenario())
    assert (dropped, subscribers) == (True, 1)
    assert slow_got == []  # it resumes from the database, after the last seq it saw
    assert fast_got == list(range(1, 11))


def test_a_subscriber_that_keeps_up_is_never_dropped():
    async def scenario() -> tuple[bool, list[int]]:
        bus = EventBus()
        subscription = bus.subscribe(max_queue=2)
        seen = []
        for seq in range(1, 101):
            bus.publish(event(seq))
            seen.append((await anext(subscription)).seq)
        return subscription.dropped, seen

    dropped, seen = asyncio.run(scenario())
    assert not dropped
    assert seen == list(range(1, 101))


def test_closing_a_subscription_ends_its_iteration_after_what_was_queued():
    async def scenario() -> tuple[list[int], int]:
        bus = EventBus()
        subscription = bus.subscribe()
        bus.publish(event(1))
        subscription.close()
        bus.publish(event(2))
        return await collect(subscription), len(bus)

    assert asyncio.run(scenario()) == ([1], 0)


def test_a_subscription_taken_after_the_bus_closed_has_already_ended():
    async def scenario() -> list[int]:
        bus = EventBus()
        bus.close()
        return await collect(bus.subscribe())

    assert asyncio.run(scenario()) == []


def test_a_queue_must_hold_at_least_one_event():
    with pytest.raises(ValueError, match="max_queue must be >= 1"):
        EventBus().subscribe(max_queue=0)
