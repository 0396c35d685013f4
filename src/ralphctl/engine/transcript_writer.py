"""Record one iteration's raw agent output in the store as it arrives (``store/transcript_chunks``).

Output is written in chunks: once ``CHUNK_BYTES`` have gathered, ``FLUSH_AFTER_S`` after the
oldest unwritten byte arrived, and on ``flush()``. The runner flushes as soon as the agent's
closing record (Claude's ``result`` line) arrives, so that what the agent reported reaches the
store at once, and survives the runner being killed a moment later (``engine/usage_recovery``
reads it back).

Chunks are written by the store's thread (``engine/storethread``), in order, while the event loop
goes on: a database that makes writes wait (a foreign SQLite lock) holds up no other loop and no
HTTP answer. Only when the agent prints faster than the database takes it, by more than
``QUEUED_LIMIT_BYTES``, does ``write`` wait for the oldest queued chunk: memory stays bounded.
``close()`` waits for every queued chunk.

The first iteration of a new loop starts before the store is open: until ``attach``, output is
held in memory up to ``HELD_LIMIT_BYTES``; what comes beyond that is counted in ``lost_bytes``,
not kept. A failed store write ends the recording (``failure``), never the iteration.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ralphctl.engine import storethread
from ralphctl.store.errors import StoreError

if TYPE_CHECKING:  # the store's import is heavy; the first agent starts before it is needed
    from ralphctl.store.repository import Store

CHUNK_BYTES = 1024 * 1024
FLUSH_AFTER_S = 1.0
HELD_LIMIT_BYTES = 8 * 1024 * 1024
QUEUED_LIMIT_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class TranscriptSummary:
    """What was recorded of an iteration's output."""

    raw_bytes: int  # output received
    lost_bytes: int  # output not recorded (held too long before the store opened, or a failure)
    failure: str | None  # why recording stopped early

    def problem(self) -> str | None:
        """A warning for the user when the transcript is incomplete; None when it is whole."""
        if self.failure is not None:
            return f"the transcript is incomplete: {self.failure}"
        if self.lost_bytes:
            return (
                f"the transcript is incomplete: {self.lost_bytes} bytes of output arrived "
                "before the store was open and could not be held"
            )
        return None


class _ChunkSink:
    """The writing end, used only by the store's thread: numbers the chunks and stops at the
    first failure. ``first_seq`` None: after what earlier processes wrote for the iteration."""

    def __init__(self, store: Store, loop_id: str, n: int, first_seq: int | None) -> None:
        self.store = store
        self.loop_id = loop_id
        self.n = n
        self.seq = first_seq
        self.failure: str | None = None
        self.lost_bytes = 0

    def write(self, chunk: bytes) -> None:
        # Imported once the store is open: it imports SQLAlchemy, which the first spawn of a
        # new loop must not wait for (engine/runner).
        from ralphctl.store.transcript_chunks import append_chunk, next_chunk_seq

        if self.failure is not None:
            self.lost_bytes += len(chunk)
            return
        try:
            if self.seq is None:
                self.seq = next_chunk_seq(self.store, self.loop_id, self.n)
            append_chunk(self.store, self.loop_id, self.n, self.seq, chunk)
        except StoreError as exc:
            self.failure = str(exc)
            self.lost_bytes += len(chunk)
            return
        self.seq += 1


class TranscriptRecorder:
    """Streams one iteration's output into the store; see the module."""

    def __init__(
        self, loop_id: str, n: int, store: Store | None = None, *, first_seq: int | None = 0
    ) -> None:
        self.loop_id = loop_id
        self.n = n
        self._first_seq = first_seq
        self._sink = None if store is None else _ChunkSink(store, loop_id, n, first_seq)
        self._pending = bytearray()
        self._held: list[bytes] = []  # chunks waiting for the store
        self._held_bytes = 0
        self._queued: deque[tuple[Future[None], int]] = deque()  # chunks the thread will write
        self._queued_bytes = 0
        self._raw_bytes = 0
        self._lost_bytes = 0
        self._timer: asyncio.TimerHandle | None = None

    def write(self, data: bytes) -> None:
        """Take output as it arrives (called from the event loop)."""
        self._raw_bytes += len(data)
        if self._sink is not None and self._sink.failure is not None:
            self._lost_bytes += len(data)
            return
        self._pending += data
        if len(self._pending) >= CHUNK_BYTES:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_AFTER_S, self.flush)

    def attach(self, store: Store) -> None:
        """The store is open: write what was held, and from now on as output arrives."""
        self._sink = _ChunkSink(store, self.loop_id, self.n, self._first_seq)
        held, self._held, self._held_bytes = self._held, [], 0
        for chunk in held:
            self._queue(chunk)
        self.flush()

    def flush(self) -> None:
        """Queue what has arrived so far for writing (or hold it until the store is attached)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        chunk = bytes(self._pending)
        self._pending = bytearray()
        if self._sink is not None:
            self._queue(chunk)
        elif self._held_bytes + len(chunk) <= HELD_LIMIT_BYTES:
            self._held.append(chunk)
            self._held_bytes += len(chunk)
        else:
            self._lost_bytes += len(chunk)

    async def close(self) -> TranscriptSummary:
        """Write the rest and wait until it is written; what was recorded. Output held for a
        store never attached is lost."""
        self.flush()
        if self._queued:
            last, _size = self._queued[-1]  # one thread writes them in order: the last is last
            await asyncio.wrap_future(last)
            self._queued.clear()
            self._queued_bytes = 0
        lost = self._lost_bytes + self._held_bytes
        if self._sink is None:
            return TranscriptSummary(self._raw_bytes, lost, None)
        return TranscriptSummary(self._raw_bytes, lost + self._sink.lost_bytes, self._sink.failure)

    def _queue(self, chunk: bytes) -> None:
        assert self._sink is not None
        while self._queued and (
            self._queued[0][0].done() or self._queued_bytes >= QUEUED_LIMIT_BYTES
        ):
            oldest, size = self._queued.popleft()
            oldest.result()  # if not written yet, the agent outruns the database: wait
            self._queued_bytes -= size
        future = storethread.queue(self._sink.store, self._sink.write, chunk)
        self._queued.append((future, len(chunk)))
        self._queued_bytes += len(chunk)


class SessionTranscripts:
    """The output of one agent process that spans several iterations (a hook-mode session):
    each piece goes to the transcript of the iteration ``current()`` names as it arrives,
    after what earlier processes wrote for that iteration."""

    def __init__(self, store: Store, loop_id: str, current: Callable[[], int]) -> None:
        self._store = store
        self._loop_id = loop_id
        self._current = current
        self._recorder: TranscriptRecorder | None = None
        self._closing: set[asyncio.Task[None]] = set()  # recorders of iterations gone by
        self.problems: list[str] = []

    def write(self, data: bytes) -> None:
        n = self._current()
        if self._recorder is None or self._recorder.n != n:
            if self._recorder is not None:
                closing = asyncio.ensure_future(self._close(self._recorder))
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)
            self._recorder = TranscriptRecorder(self._loop_id, n, self._store, first_seq=None)
        self._recorder.write(data)

    async def close(self) -> None:
        """Write the rest and wait until it is written; ``problems`` says what could not be
        recorded."""
        if self._recorder is not None:
            await self._close(self._recorder)
            self._recorder = None
        await asyncio.gather(*self._closing)

    async def _close(self, recorder: TranscriptRecorder) -> None:
        problem = (await recorder.close()).problem()
        if problem is not None:
            self.problems.append(f"iteration {recorder.n}: {problem}")
