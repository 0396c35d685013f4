"""Every process's events, in seq order, for a server on PostgreSQL: the fleet's workers', the
CLI's, other servers'.

On PostgreSQL events take their seq and commit in one order (``store.core``), so the events
table is one sequence across every process that writes it. A process that writes events for
a server to see announces it on the channel ``ralphctl_events`` (``announce``, delivered at
commit: a fleet worker does it in every transaction of a held loop). The server's feed
listens, and on each announcement, and every ``poll_s`` in case one was missed, reads the
events after the last it published and publishes them.

Its own events the manager hands to ``local`` as it stores them: published at once when it is
the next seq, else (another process wrote in between) read back with the others, so that the
subscribers see every event once, in seq order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import psycopg
from sqlalchemy import Connection, func, select

from ralphctl.store import metrics
from ralphctl.store.errors import StoreError
from ralphctl.store.records import EventRecord
from ralphctl.store.repository import Store

CHANNEL = "ralphctl_events"
POLL_S = 5.0
PAGE = 500
RETRY_S = 1.0

log = logging.getLogger(__name__)


def announce(conn: Connection, loop_id: str) -> None:
    """Tell the servers listening that events of ``loop_id`` may be stored (at commit)."""
    conn.execute(select(func.pg_notify(CHANNEL, loop_id)))


def libpq_url(url: str) -> str:
    """The libpq address of a resolved ``postgresql+psycopg://`` URL."""
    return "postgresql://" + url.partition("://")[2]


class EventFeed:
    """Publishes the stored events after ``cursor`` in seq order, through ``publish``."""

    def __init__(
        self, store: Store, publish: Callable[[EventRecord], None], *, poll_s: float = POLL_S
    ) -> None:
        self.store = store
        self.publish = publish
        self.poll_s = poll_s
        self.cursor = 0
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Begin after the newest event stored now; listen for announcements."""
        self.cursor = await asyncio.to_thread(metrics.last_event_seq, self.store)
        self._tasks = [
            asyncio.create_task(self._listen(), name="event feed: listen"),
            asyncio.create_task(self._drain(), name="event feed: read"),
        ]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def local(self, event: EventRecord) -> None:
        """An event this process stored: published now when it is next, else read back."""
        if event.seq == self.cursor + 1:
            self.cursor = event.seq
            self.publish(event)
        elif event.seq > self.cursor:
            self._wake.set()

    async def _drain(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll_s)
            self._wake.clear()
            try:
                await self._read_all()
            except StoreError as exc:
                log.warning("cannot read the events of other processes: %s", exc)
                await asyncio.sleep(RETRY_S)

    async def _read_all(self) -> None:
        while True:
            page = await asyncio.to_thread(self.store.events_since, self.cursor, None, PAGE)
            for event in page:
                if event.seq > self.cursor:  # not published meanwhile by ``local``
                    self.cursor = event.seq
                    self.publish(event)
            if len(page) < PAGE:
                return

    async def _listen(self) -> None:
        """Wake the reader on each announcement; reconnect when the connection drops."""
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    libpq_url(self.store.url), autocommit=True
                )
                async with conn:
                    await conn.execute(f'LISTEN "{CHANNEL}"')
                    self._wake.set()  # what was announced while not listening
                    async for _notification in conn.notifies():
                        self._wake.set()
            except psycopg.Error as exc:
                log.warning("not listening for other processes' events: %s", exc)
                await asyncio.sleep(RETRY_S)
