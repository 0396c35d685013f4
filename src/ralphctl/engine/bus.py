"""In-process fan-out of stored events to live subscribers, each with a bounded queue.

A subscriber that falls ``max_queue`` events behind is dropped rather than buffered without
bound: its queue is emptied, ``dropped`` is set and its iteration ends. It catches up from the
database (events after the last seq it saw), then subscribes again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ralphctl.store.records import EventRecord


class Subscription:
    """Live events in seq order: ``async for event in subscription``; ``close()`` to leave."""

    def __init__(self, bus: EventBus, max_queue: int) -> None:
        if max_queue < 1:
            raise ValueError(f"max_queue must be >= 1, not {max_queue}")
        self._bus = bus
        self._queue: asyncio.Queue[EventRecord | None] = asyncio.Queue(max_queue + 1)
        self._capacity = max_queue
        self.dropped = False
        self.closed = False
        self._finished = False

    def __aiter__(self) -> AsyncIterator[EventRecord]:
        return self

    async def __anext__(self) -> EventRecord:
        if self._finished:
            raise StopAsyncIteration
        event = await self._queue.get()
        if event is None:
            self._finished = True
            raise StopAsyncIteration
        return event

    def close(self) -> None:
        """Stop receiving; an iteration in progress ends after the events already queued."""
        self._end()
        self._bus.discard(self)

    def _offer(self, event: EventRecord) -> bool:
        """Queue ``event``; False (and dropped) if the subscriber is too far behind."""
        if self._queue.qsize() >= self._capacity:
            self.dropped = True
            _drain(self._queue)
            self._end()
            return False
        self._queue.put_nowait(event)
        return True

    def _end(self) -> None:
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(None)  # one slot is kept free for this


class EventBus:
    """Delivers each published event to every subscriber, in the order published."""

    def __init__(self) -> None:
        self._subscribers: set[Subscription] = set()
        self._closed = False

    def subscribe(self, *, max_queue: int = 1000) -> Subscription:
        """A new subscription; on a closed bus one that has already ended."""
        subscription = Subscription(self, max_queue)
        if self._closed:
            subscription.close()
        else:
            self._subscribers.add(subscription)
        return subscription

    def publish(self, event: EventRecord) -> None:
        for subscription in list(self._subscribers):
            if not subscription._offer(event):
                self._subscribers.discard(subscription)

    def discard(self, subscription: Subscription) -> None:
        self._subscribers.discard(subscription)

    def close(self) -> None:
        """End every subscription, and any taken later."""
        self._closed = True
        for subscription in list(self._subscribers):
            subscription.close()

    def __len__(self) -> int:
        return len(self._subscribers)


def _drain(queue: asyncio.Queue[EventRecord | None]) -> None:
    while not queue.empty():
        queue.get_nowait()
