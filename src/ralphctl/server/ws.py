"""``/ws/events``: a snapshot of every loop, then every event in seq order, live.

Resuming with ``?since=SEQ`` misses nothing and repeats nothing: the live subscription is
taken first, the store is replayed after ``since`` page by page, and live events at or below
the last seq sent are skipped. Without ``since`` the stream starts after the newest event
stored when the snapshot was taken. A client that reads too slowly overflows its bounded
queue and is disconnected (close code 1013) with the seq to resume from; a database that fails
closes the stream with 1011, with the seq to resume from too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Coroutine
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Any, Protocol

import anyio
import orjson
from fastapi import Query, WebSocket, WebSocketDisconnect, status
from starlette.concurrency import run_in_threadpool

from ralphctl.domain.money import round_costs
from ralphctl.engine.manager import LoopManager, Subscription
from ralphctl.server.api.loops import listed
from ralphctl.server.api.params import MAX_INT64
from ralphctl.server.api.prometheus import Telemetry
from ralphctl.server.schemas import Snapshot, SnapshotData
from ralphctl.store import metrics
from ralphctl.store.errors import LoopNotFound, StoreError
from ralphctl.store.records import EventRecord
from ralphctl.store.repository import Store

QUEUE_SIZE = 1000  # events a client may lag behind before it is dropped
REPLAY_PAGE = 500
TRY_AGAIN_LATER = 1013
INTERNAL_ERROR = 1011
SINCE = "Replay the events after this seq."


async def events_socket(
    websocket: WebSocket,
    since: Annotated[int | None, Query(ge=0, le=MAX_INT64, description=SINCE)] = None,
    loop_id: Annotated[str | None, Query(description="Only this loop's events.")] = None,
) -> None:
    """Stream until either side goes away (``RequireToken`` has checked the token, and FastAPI
    refuses a bad ``since`` with 1008)."""
    store: Store = websocket.app.state.store
    if loop_id is not None:
        try:
            loop_id = (await run_in_threadpool(store.get_loop, loop_id)).id
        except LoopNotFound as exc:
            await websocket.close(status.WS_1008_POLICY_VIOLATION, reason=str(exc)[:120])
            return
        except StoreError:
            await websocket.close(INTERNAL_ERROR, reason="the database failed: reconnect later")
            return
    manager: LoopManager = websocket.app.state.manager
    telemetry: Telemetry = websocket.app.state.telemetry
    subscription = manager.subscribe(max_queue=QUEUE_SIZE)
    await websocket.accept()
    telemetry.clients.inc()
    stream = EventStream(websocket, store, subscription, loop_id)
    try:
        await _until_either_ends(stream.send_all(since), _until_disconnected(websocket))
    finally:
        subscription.close()
        telemetry.clients.dec()
    if subscription.dropped:
        telemetry.dropped.inc()


class Outbox(Protocol):
    """What a stream sends through: the WebSocket."""

    async def send_text(self, data: str) -> None: ...

    async def close(self, code: int = 1000, reason: str | None = None) -> None: ...


class EventStream:
    """One client's stream: snapshot, replay after ``since``, then live, each seq once."""

    def __init__(
        self, websocket: Outbox, store: Store, subscription: Subscription, loop_id: str | None
    ) -> None:
        self.websocket = websocket
        self.store = store
        self.subscription = subscription
        self.loop_id = loop_id
        self.last = 0  # the newest seq sent (or known to the client)

    async def send_all(self, since: int | None) -> None:
        """Snapshot, replay, then live events; a database failure ends the stream (1011)."""
        try:
            await self._stream(since)
        except StoreError:
            reason = f"the database failed: reconnect with since={self.last}"
            await self.websocket.close(INTERNAL_ERROR, reason=reason)

    async def _stream(self, since: int | None) -> None:
        watermark = await self._snapshot()
        if since is None:
            self.last = watermark
        else:
            self.last = since
            await self._replay()
        async for event in self.subscription:
            await self._send(event)
        if self.subscription.dropped:
            reason = f"too slow: reconnect with since={self.last}"
            await self.websocket.close(TRY_AGAIN_LATER, reason=reason)
        else:
            reason = f"stream ended: reconnect with since={self.last}"
            await self.websocket.close(status.WS_1001_GOING_AWAY, reason=reason)

    async def _snapshot(self) -> int:
        """Send every loop (or the one followed); returns the newest seq stored before."""
        last_seq = await run_in_threadpool(metrics.last_event_seq, self.store)
        if self.loop_id is None:
            loops = await run_in_threadpool(self.store.list_loops)
        else:
            loops = [await run_in_threadpool(self.store.get_loop, self.loop_id)]
        listed_loops = await run_in_threadpool(listed, self.store, loops)
        snapshot = Snapshot(
            data=SnapshotData(loops=listed_loops, last_seq=last_seq),
            timestamp=datetime.now(UTC),
        )
        await self.websocket.send_text(snapshot.model_dump_json())
        return last_seq

    async def _replay(self) -> None:
        while True:
            page = await run_in_threadpool(
                self.store.events_since, self.last, self.loop_id, REPLAY_PAGE
            )
            for event in page:
                await self._send(event)
            if len(page) < REPLAY_PAGE:
                return

    async def _send(self, event: EventRecord) -> None:
        if event.seq <= self.last or (self.loop_id and event.loop_id != self.loop_id):
            return
        await self.websocket.send_text(wire(event))
        self.last = event.seq


def wire(event: EventRecord) -> str:
    """``{event_type, loop_id, seq, data, timestamp}`` as JSON (UTC times end in ``Z``; costs
    rounded to a millionth of a dollar, as in every JSON answer)."""
    rounded = replace(event, data=round_costs(event.data))
    return orjson.dumps(rounded, option=orjson.OPT_UTC_Z).decode()


async def _until_disconnected(websocket: WebSocket) -> None:
    """Read (and ignore) what the client sends until it disconnects."""
    while (await websocket.receive())["type"] != "websocket.disconnect":
        pass


async def _until_either_ends(*coroutines: Coroutine[Any, Any, None]) -> None:
    """Run all; when one ends, cancel the others. A client gone mid-send is not an error."""
    async with anyio.create_task_group() as group:

        async def run(coroutine: Coroutine[Any, Any, None]) -> None:
            with contextlib.suppress(WebSocketDisconnect):
                await coroutine
            group.cancel_scope.cancel()

        for coroutine in coroutines:
            group.start_soon(run, coroutine)
