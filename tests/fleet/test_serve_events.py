"""A server's event feed on PostgreSQL (``engine.eventfeed``): the events other processes
store reach its subscribers when they are announced, interleaved with its own, each once and
in seq order; one that was never announced arrives with the next poll."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from ralphctl.engine.eventfeed import EventFeed, announce
from ralphctl.store.records import EventRecord
from ralphctl.store.repository import Store
from tests.store.factories import new_loop

pytestmark = pytest.mark.postgres

WAIT_S = 10.0


@pytest.fixture
def stores(postgres_url: str) -> Iterator[tuple[Store, Store]]:
    """The server's store and another process's, on one database holding loop ``loop0001``."""
    with Store.open(postgres_url) as server, Store.open(postgres_url) as other:
        server.create_loop(new_loop("loop0001"))
        yield server, other


def written_elsewhere(store: Store, event_type: str, *, announced: bool = True) -> EventRecord:
    """An event stored by another process, announced (or not) as a worker announces."""
    event = store.append_event("loop0001", event_type, {})
    if announced:
        with store.transaction("announce") as conn:
            announce(conn, "loop0001")
    return event


async def until(published: list[EventRecord], count: int) -> None:
    async with asyncio.timeout(WAIT_S):
        while len(published) < count:
            await asyncio.sleep(0.01)


def test_other_processes_events_arrive_with_this_ones_each_once_in_seq_order(
    stores: tuple[Store, Store],
) -> None:
    server, other = stores
    published: list[EventRecord] = []

    async def scenario() -> None:
        feed = EventFeed(server, published.append, poll_s=60)
        await feed.start()
        try:
            await asyncio.sleep(0.2)  # listening
            feed.local(server.append_event("loop0001", "mine-1", {}))  # next: published now
            assert [event.event_type for event in published] == ["mine-1"]
            written_elsewhere(other, "theirs-1")
            feed.local(server.append_event("loop0001", "mine-2", {}))  # after theirs: read back
            written_elsewhere(other, "theirs-2")
            await until(published, 4)
        finally:
            await feed.close()

    asyncio.run(scenario())

    assert [event.event_type for event in published] == ["mine-1", "theirs-1", "mine-2", "theirs-2"]
    assert [event.seq for event in published] == sorted({event.seq for event in published})


def test_an_event_nobody_announced_arrives_with_the_next_poll(stores: tuple[Store, Store]) -> None:
    server, other = stores
    published: list[EventRecord] = []

    async def scenario() -> EventRecord:
        feed = EventFeed(server, published.append, poll_s=0.5)
        await feed.start()
        try:
            quiet = written_elsewhere(other, "unannounced", announced=False)
            await until(published, 1)
        finally:
            await feed.close()
        return quiet

    assert [asyncio.run(scenario())] == published
