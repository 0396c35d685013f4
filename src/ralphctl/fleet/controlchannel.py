"""Control requests for fleet loops: kept in PostgreSQL, woken by LISTEN/NOTIFY.

A CLI or server that pauses or stops a loop a worker holds stores the request on the loop's
lease row (``loop_leases.control_request``, the strongest kept: stop over pause now over
pause) and sends ``{"loop_id", "request"}`` on the channel ``ralphctl_control`` (``send``),
in the transaction that found the lease held. The notification is only the wake-up: the
holder also reads the row (``pending``) when it acquires the lease, at every renewal and
whenever its listening connection is opened again, so a request sent while that connection
was down is not lost. A request stays until a controller settles the loop (``withdraw``:
resume, or a pause or stop of a loop no worker holds).

A worker listens on one connection for all its loops (``ControlListener``, named
``ralphctl control <worker>`` in ``pg_stat_activity``); each held loop has an ``Inbox``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from enum import StrEnum
from typing import Any

import psycopg
from sqlalchemy import Connection, func, select, update

from ralphctl.engine.eventfeed import libpq_url
from ralphctl.fleet.errors import FleetError
from ralphctl.store.schema import loop_leases

CHANNEL = "ralphctl_control"
RETRY_S = 1.0

log = logging.getLogger(__name__)


class FleetRequest(StrEnum):
    """What a holder is asked: pause after the running iteration, pause now (the iteration
    interrupted), or stop now (interrupted, as a stop through a server is)."""

    PAUSE = "pause"
    PAUSE_NOW = "pause_now"
    STOP = "stop"


_STRENGTH = {FleetRequest.PAUSE: 0, FleetRequest.PAUSE_NOW: 1, FleetRequest.STOP: 2}


def send(conn: Connection, loop_id: str, request: FleetRequest) -> None:
    """Ask the holder of ``loop_id`` for ``request``: stored (unless a stronger one waits)
    and announced, both when the caller commits. Call it with the lease row locked."""
    kept = pending(conn, loop_id)
    if kept is None or _STRENGTH[request] > _STRENGTH[kept]:
        conn.execute(
            update(loop_leases)
            .where(loop_leases.c.loop_id == loop_id)
            .values(control_request=str(request))
        )
    payload = json.dumps({"loop_id": loop_id, "request": str(request)})
    conn.execute(select(func.pg_notify(CHANNEL, payload)))


def pending(conn: Connection, loop_id: str) -> FleetRequest | None:
    """The request waiting for the holder of ``loop_id``, if any."""
    query = select(loop_leases.c.control_request).where(loop_leases.c.loop_id == loop_id)
    stored = conn.execute(query).scalar_one_or_none()
    return _parsed(stored)


def withdraw(conn: Connection, loop_id: str) -> None:
    """Forget the loop's waiting request: a controller settled the loop itself."""
    conn.execute(
        update(loop_leases).where(loop_leases.c.loop_id == loop_id).values(control_request=None)
    )


def _parsed(stored: str | None) -> FleetRequest | None:
    try:
        return None if stored is None else FleetRequest(stored)
    except ValueError:
        log.warning("ignored a control request not understood: %r", stored)
        return None


class Inbox:
    """The requests for one held loop: handed to ``on_request`` as they arrive; those that
    arrive before it is set wait for it."""

    def __init__(self, loop_id: str) -> None:
        self.loop_id = loop_id
        self._waiting: list[FleetRequest] = []
        self._handler: Callable[[FleetRequest], None] | None = None

    def on_request(self, handler: Callable[[FleetRequest], None]) -> None:
        self._handler = handler
        waiting, self._waiting = self._waiting, []
        for request in waiting:
            handler(request)

    def take(self, request: FleetRequest | None) -> None:
        """One request, heard or read back (None: none waits); each handling is idempotent."""
        if request is None:
            return
        log.info("loop %s: %s requested", self.loop_id, request)
        if self._handler is None:
            self._waiting.append(request)
        else:
            self._handler(request)

    def deliver(self, payload: str) -> None:
        """One notification's payload; another loop's, or one not understood, is ignored."""
        try:
            message = json.loads(payload)
            if message.get("loop_id") != self.loop_id:
                return
            request = FleetRequest(message.get("request"))
        except (ValueError, AttributeError):
            log.warning("ignored a control request not understood: %r", payload[:200])
            return
        self.take(request)


class ControlListener:
    """One worker's listening connection, shared by its held loops (``inbox``)."""

    def __init__(self, url: str, worker: str) -> None:
        self.url = url
        self.worker = worker
        self._inboxes: dict[str, Inbox] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Listen from now on; FleetError when the database cannot be reached."""
        try:
            conn = await self._listen()
        except psycopg.Error as exc:
            why = f"worker {self.worker}: cannot listen for control requests: {exc}"
            raise FleetError(why) from exc
        self._task = asyncio.create_task(self._receive(conn), name="control requests")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @contextlib.asynccontextmanager
    async def inbox(self, loop_id: str) -> AsyncIterator[Inbox]:
        """The requests of ``loop_id`` heard while the block runs (enter it before acquiring
        the lease: a request made once the lease is visible as held then reaches it)."""
        inbox = Inbox(loop_id)
        self._inboxes[loop_id] = inbox
        try:
            yield inbox
        finally:
            if self._inboxes.get(loop_id) is inbox:
                del self._inboxes[loop_id]

    async def _listen(self) -> psycopg.AsyncConnection[Any]:
        conn = await psycopg.AsyncConnection.connect(
            libpq_url(self.url),
            autocommit=True,
            application_name=f"ralphctl control {self.worker}",
        )
        await conn.execute(f'LISTEN "{CHANNEL}"')
        return conn

    async def _receive(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Deliver what is heard until cancelled (the connection closed then), listening
        again whenever the connection is lost and reading back what was sent meanwhile."""
        while True:
            try:
                async with conn:
                    async for notification in conn.notifies():
                        inbox = self._inboxes.get(_loop_of(notification.payload) or "")
                        if inbox is not None:
                            inbox.deliver(notification.payload)
            except psycopg.Error as exc:
                log.warning("worker %s: control requests interrupted: %s", self.worker, exc)
            conn = await self._listen_again()

    async def _listen_again(self) -> psycopg.AsyncConnection[Any]:
        while True:
            await asyncio.sleep(RETRY_S)
            try:
                conn = await self._listen()
                await self._read_back(conn)
            except psycopg.Error as exc:
                log.warning("worker %s: cannot listen for control requests: %s", self.worker, exc)
                continue
            log.info("worker %s: listening for control requests again", self.worker)
            return conn

    async def _read_back(self, conn: psycopg.AsyncConnection[Any]) -> None:
        for loop_id, inbox in list(self._inboxes.items()):
            cursor = await conn.execute(
                "SELECT control_request FROM loop_leases WHERE loop_id = %s", (loop_id,)
            )
            row = await cursor.fetchone()
            inbox.take(_parsed(row[0]) if row is not None else None)


def _loop_of(payload: str) -> str | None:
    try:
        loop_id = json.loads(payload).get("loop_id")
    except (ValueError, AttributeError):
        return None
    return loop_id if isinstance(loop_id, str) else None
