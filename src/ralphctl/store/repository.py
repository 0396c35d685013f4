"""``Store``: read and write loops, iterations, events and errors as plain records.

Every write is committed before its method returns, so a process killed right after loses
nothing. Errors reach callers as ``StoreError`` with a message fit for the user.

The queries are SQLAlchemy Core's (``core.CoreStore``), for every database. On a SQLite file
at the head revision, the hot path of a run (a loop's row, its iterations, events,
checkpoints, errors and transcript chunks) goes through the standard library instead
(``sqlite_direct``), into the same rows: ``ralphctl run`` then records its first iteration
without waiting for SQLAlchemy's import, done only by the first call of another kind.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ralphctl.domain.states import LoopStatus
from ralphctl.store import sqlite_direct as direct
from ralphctl.store.errors import LoopNotFound, StoreError
from ralphctl.store.records import (
    CheckpointRecord,
    ErrorRecord,
    EventRecord,
    IterationRecord,
    LoopRecord,
    RecoveredUsage,
    loop_summary,
    loop_values,
    record_values,
)
from ralphctl.store.url import display, mask, resolve_url, sqlite_path

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

    from ralphctl.store.core import CoreStore

__all__ = ["INTERRUPTED_MESSAGE", "LoopNotFound", "Store", "StoreError"]

INTERRUPTED_MESSAGE = "interrupted: the runner stopped before the iteration finished"

_LOOP_KEYS = frozenset({"id", "created_at"})
_ITERATION_KEYS = frozenset({"loop_id", "n"})

Events = Sequence[tuple[str, dict[str, Any]]]


class Store:
    """One database. Open it with ``Store.open``; it is safe to share between threads."""

    def __init__(
        self, engine: Engine | None, url: str, fast: direct.SqliteDirect | None = None
    ) -> None:
        """``engine`` None: the SQLAlchemy side is opened at its first use."""
        from_engine = None
        if engine is not None:
            from ralphctl.store.core import CoreStore

            from_engine = CoreStore(engine)
        self.url = url
        self._core_store = from_engine
        self._fast = fast
        self._opening = threading.Lock()

    @classmethod
    def open(cls, url: str | None = None) -> Store:
        """Open (creating or upgrading the schema if needed) the database ``url`` resolves to."""
        resolved = resolve_url(url)
        path = sqlite_path(resolved) if resolved.startswith("sqlite") else None
        if path is None:
            from ralphctl.store.core import CoreStore

            return cls(None, resolved)._with_core(CoreStore.open(resolved))
        fast = _open_fast(resolved, path) if path.exists() else None
        if fast is not None:
            return cls(None, resolved, fast)
        from ralphctl.store.core import CoreStore

        core = CoreStore.open(resolved)  # creates or upgrades the schema
        try:
            fast = _open_fast(resolved, path)
        except StoreError:
            core.close()
            raise
        return cls(None, resolved, fast)._with_core(core)

    @classmethod
    def over(cls, core: CoreStore, url: str) -> Store:
        """A store whose every query goes through ``core`` (fleet mode: one fenced by a
        loop's lease, ``fleet.heldstore``); ``url`` is the database's, for messages."""
        return cls(None, url)._with_core(core)

    def _with_core(self, core: CoreStore) -> Store:
        self._core_store = core
        return self

    @property
    def _core(self) -> CoreStore:
        """The SQLAlchemy side, opened (SQLAlchemy imported) at its first use."""
        with self._opening:
            if self._core_store is None:
                from ralphctl.store.core import CoreStore

                self._core_store = CoreStore.open(self.url)
            return self._core_store

    def close(self) -> None:
        if self._fast is not None:
            self._fast.close()
        if self._core_store is not None:
            self._core_store.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({mask(self.url)!r})"

    # Loops

    def create_loop(self, loop: LoopRecord) -> LoopRecord:
        if self._fast is None:
            return self._core.create_loop(loop)
        stored = replace(loop, updated_at=_now())
        with self._writing("create the loop") as conn:
            direct.insert(conn, "loops", loop_values(stored))
        return stored

    def get_loop(self, loop_id_or_prefix: str) -> LoopRecord:
        """The loop with this exact id, else the one loop whose id starts with it (>= 4 chars)."""
        return self._core.get_loop(loop_id_or_prefix)

    def list_loops(
        self,
        statuses: Collection[LoopStatus] | None = None,
        limit: int | None = None,
        *,
        workdir: str | None = None,
    ) -> list[LoopRecord]:
        """Loops, newest first, optionally only those in ``statuses`` (and in ``workdir``)."""
        return self._core.list_loops(statuses, limit, workdir=workdir)

    def save_loop(self, loop: LoopRecord) -> LoopRecord:
        """Write back every mutable field; returns the record with its new ``updated_at``.

        For a loop's only writer (its runner). Writers that may overlap (the Stop hook's
        history) use ``create_loop_once``, ``add_finished_iteration`` and ``end_loop``, whose
        updates are guarded, so the row never goes back to a state read before."""
        if self._fast is None:
            return self._core.save_loop(loop)
        with self._writing("save the loop") as conn:
            return _update_loop(conn, loop)

    def save_loop_with_events(
        self, loop: LoopRecord, events: Events
    ) -> tuple[LoopRecord, list[EventRecord]]:
        """``save_loop`` and its ``events`` in one transaction (a process killed in between
        never leaves a loop ended without its end's events): the saved record and the stored
        events."""
        if self._fast is None:
            return self._core.save_loop_with_events(loop, events)
        with self._writing("save the loop") as conn:
            return _update_loop(conn, loop), _insert_events(conn, loop.id, events)

    def create_loop_once(self, loop: LoopRecord) -> bool:
        """Store ``loop`` unless a loop with its id exists; True if this call created it."""
        return self._core.create_loop_once(loop)

    def add_finished_iteration(
        self, iteration: IterationRecord, advance: Mapping[str, Any], events: Events = ()
    ) -> list[EventRecord] | None:
        """Store an iteration that is over, with its events, unless it is stored already, and
        move its loop forward to it, in one transaction.

        The loop gets ``advance`` (its ``iteration`` = this iteration's number, and any other
        columns) only while it is behind: writers arriving in any order never move it back.
        Returns the stored events, or None (nothing written) if the iteration was there.
        """
        return self._core.add_finished_iteration(iteration, advance, events)

    def end_loop(
        self, loop_id: str, changes: Mapping[str, Any], events: Events = ()
    ) -> list[EventRecord] | None:
        """Give a loop that is still active its final ``changes`` (status, stop reason…) and
        ``events``, in one transaction. Returns the stored events, or None (nothing written)
        if it had ended already: a late or repeated writer never changes how a loop ended."""
        return self._core.end_loop(loop_id, changes, events)

    # Iterations

    def begin_iteration(self, iteration: IterationRecord, events: Events = ()) -> list[EventRecord]:
        """Record that an iteration started (status ``running``) and its ``events``, in one
        transaction. Returns the stored events, for publishing."""
        if self._fast is None:
            return self._core.begin_iteration(iteration, events)
        values = record_values(replace(iteration, status="running"))
        with self._writing(f"record the start of iteration {iteration.n}") as conn:
            direct.insert(conn, "iterations", values)
            return _insert_events(conn, iteration.loop_id, events)

    def complete_iteration(
        self,
        iteration: IterationRecord,
        loop: LoopRecord,
        events: Events = (),
        checkpoint: str | None = None,
    ) -> list[EventRecord]:
        """Write the finished iteration, the loop's new totals, its events and the commit sha of
        its ``checkpoint`` (if one was made) in one transaction.

        Returns the stored events (with their seqs), for publishing.
        """
        if self._fast is None:
            return self._core.complete_iteration(iteration, loop, events, checkpoint)
        if iteration.loop_id != loop.id:
            raise ValueError(f"iteration of loop {iteration.loop_id!r} given with loop {loop.id!r}")
        values = {k: v for k, v in record_values(iteration).items() if k not in _ITERATION_KEYS}
        key = {"loop_id": iteration.loop_id, "n": iteration.n}
        with self._writing(f"record iteration {iteration.n}") as conn:
            if not direct.update(conn, "iterations", values, key):
                raise StoreError(f"iteration {iteration.n} of loop {loop.id!r} was never begun")
            _update_loop(conn, loop)
            if checkpoint is not None:
                _insert_checkpoint(conn, loop.id, iteration.n, checkpoint, loop_summary(loop))
            return _insert_events(conn, loop.id, events)

    def set_iteration_agent(self, loop_id: str, n: int, pid: int, started_at: datetime) -> None:
        """Record the agent process of an iteration begun before its agent started."""
        if self._fast is None:
            return self._core.set_iteration_agent(loop_id, n, pid, started_at)
        values = {"agent_pid": pid, "agent_started_at": started_at}
        with self._writing(f"record the agent of iteration {n}") as conn:
            direct.update(conn, "iterations", values, {"loop_id": loop_id, "n": n})
        return None

    def running_iterations(self, loop_id: str) -> list[IterationRecord]:
        """The loop's iterations whose status is ``running``, in order."""
        if self._fast is None:
            return self._core.running_iterations(loop_id)
        key = {"loop_id": loop_id, "status": "running"}
        with self._reading("read running iterations") as conn:
            rows = direct.select(conn, "iterations", key, order_by="n")
        return [IterationRecord(**row) for row in rows]

    def interrupt_running_iterations(
        self,
        loop_id: str,
        notes: Mapping[int, str] | None = None,
        recovered: Mapping[int, RecoveredUsage] | None = None,
    ) -> list[int]:
        """Mark iterations left ``running`` (by a runner that died) as interrupted; ``notes``
        adds to the error message of some of them (by number), ``recovered`` records what some
        of them spent (and adds it to the loop's totals), all in one transaction."""
        return self._core.interrupt_running_iterations(loop_id, notes, recovered)

    def record_unrecorded(
        self,
        iteration: IterationRecord,
        events: Events = (),
        loop_state: Mapping[str, Any] | None = None,
        checkpoint: str | None = None,
    ) -> list[EventRecord] | None:
        """Record an iteration the store refused before (kept in ``engine/unrecorded``'s
        journal), exactly once, in one transaction: a finished one replaces its ``running``
        row (or is added) with its events and the sha of its ``checkpoint`` (if one was made),
        and grows its loop's totals by what it spent, and when it is the loop's newest its
        ``loop_state`` (streaks, breaker, runtime) becomes the loop's; one only begun is added
        as ``running``. Returns the stored events, or None (nothing written) when the
        iteration is recorded already."""
        return self._core.record_unrecorded(iteration, events, loop_state, checkpoint)

    def iterations(self, loop_id: str) -> list[IterationRecord]:
        if self._fast is None:
            return self._core.iterations(loop_id)
        with self._reading("read iterations") as conn:
            rows = direct.select(conn, "iterations", {"loop_id": loop_id}, order_by="n")
        return [IterationRecord(**row) for row in rows]

    def iteration_starts_since(self, since: datetime, loop_id: str | None = None) -> list[datetime]:
        """When iterations started at or after ``since``, oldest first; every loop's when
        ``loop_id`` is None. What calls-per-hour limits count."""
        return self._core.iteration_starts_since(since, loop_id)

    # Events and errors

    def append_event(self, loop_id: str, event_type: str, data: dict[str, Any]) -> EventRecord:
        (stored,) = self.append_events(loop_id, [(event_type, data)])
        return stored

    def append_events(self, loop_id: str, batch: Events) -> list[EventRecord]:
        """Store several events in one transaction, in order."""
        if self._fast is None:
            return self._core.append_events(loop_id, batch)
        with self._writing("record events") as conn:
            return _insert_events(conn, loop_id, batch)

    def events_since(
        self, seq: int, loop_id: str | None = None, limit: int = 1000
    ) -> list[EventRecord]:
        """Events after ``seq`` (0 for all), oldest first, at most ``limit``."""
        return self._core.events_since(seq, loop_id, limit)

    def events_of(self, loop_id: str, types: Sequence[str], after: int = 0) -> list[EventRecord]:
        """The loop's events of these types after seq ``after`` (0 for all), oldest first.
        On the hot path: a runner reads its loop's messages so before every iteration."""
        if self._fast is None:
            return self._core.events_of(loop_id, types, after)
        marks = ", ".join("?" for _ in types)
        sql = (
            "SELECT seq, loop_id, event_type, data, timestamp FROM events"
            f" WHERE loop_id = ? AND event_type IN ({marks}) AND seq > ? ORDER BY seq"
        )
        with self._reading("read events") as conn:
            rows = direct.rows(conn, "events", sql, (loop_id, *types, after))
        return [EventRecord(**row) for row in rows]

    def add_error(
        self,
        loop_id: str,
        iteration: int | None,
        error_type: str,
        message: str,
        context: dict[str, Any],
    ) -> ErrorRecord:
        if self._fast is None:
            return self._core.add_error(loop_id, iteration, error_type, message, context)
        record = ErrorRecord(0, loop_id, iteration, error_type, message, context, _now())
        values = record_values(record)
        del values["id"]
        with self._writing("record the error") as conn:
            return replace(record, id=direct.insert(conn, "errors", values))

    def errors(self, loop_id: str) -> list[ErrorRecord]:
        return self._core.errors(loop_id)

    # Checkpoints

    def add_checkpoint(
        self, loop_id: str, iteration: int, commit_sha: str, snapshot: dict[str, Any]
    ) -> CheckpointRecord:
        if self._fast is None:
            return self._core.add_checkpoint(loop_id, iteration, commit_sha, snapshot)
        with self._writing("record the checkpoint") as conn:
            return _insert_checkpoint(conn, loop_id, iteration, commit_sha, snapshot)

    def checkpoints(self, loop_id: str) -> list[CheckpointRecord]:
        return self._core.checkpoints(loop_id)

    # Transcripts (``transcript_chunks`` packs and reads them)

    def add_transcript_chunk(self, values: Mapping[str, Any]) -> None:
        """Store one row of ``transcript_chunks`` (``values``: its columns)."""
        if self._fast is None:
            return self._core.add_transcript_chunk(values)
        with self._writing(f"record the transcript of iteration {values['n']}") as conn:
            direct.insert(conn, "transcript_chunks", values)
        return None

    def last_transcript_seq(self, loop_id: str, n: int) -> int | None:
        """The seq of the last stored chunk of iteration ``n``; None without chunks."""
        if self._fast is None:
            return self._core.last_transcript_seq(loop_id, n)
        sql = "SELECT max(seq) FROM transcript_chunks WHERE loop_id = ? AND n = ?"
        with self._reading(f"read the transcript of iteration {n}") as conn:
            last = direct.scalar(conn, sql, (loop_id, n))
        return None if last is None else int(last)

    @contextmanager
    def transaction(self, doing: str) -> Iterator[Connection]:
        """A connection whose work is committed on success and rolled back on any error, which
        becomes ``StoreError("cannot <doing>: …")``. For queries kept in their own modules
        (``metrics``, ``retention``)."""
        with self._core.transaction(doing) as conn:
            yield conn

    @contextmanager
    def _writing(self, doing: str) -> Iterator[sqlite3.Connection]:
        assert self._fast is not None
        with _failing_as(doing), self._fast.transaction() as conn:
            yield conn

    @contextmanager
    def _reading(self, doing: str) -> Iterator[sqlite3.Connection]:
        assert self._fast is not None
        with _failing_as(doing):
            yield self._fast.reading()


@contextmanager
def _failing_as(doing: str) -> Iterator[None]:
    """The errors SQLAlchemy would have wrapped (the driver's, a value its types refuse) as
    ``StoreError("cannot <doing>: …")``, worded as ``core`` words them."""
    try:
        yield
    except (sqlite3.Error, TypeError, ValueError) as exc:
        raise StoreError(f"cannot {doing}: {' '.join(str(exc).split())}") from exc


def _open_fast(url: str, path: Path) -> direct.SqliteDirect | None:
    try:
        return direct.SqliteDirect.open(path)
    except sqlite3.DatabaseError as exc:
        cause = " ".join(str(exc).split())
        if isinstance(exc, sqlite3.OperationalError):
            raise StoreError(f"cannot open the SQLite database {display(url)} ({cause})") from exc
        raise StoreError(f"{display(url)} is not a ralphctl database ({cause})") from exc


def _update_loop(conn: sqlite3.Connection, loop: LoopRecord) -> LoopRecord:
    stored = replace(loop, updated_at=_now())
    values = {k: v for k, v in loop_values(stored).items() if k not in _LOOP_KEYS}
    if not direct.update(conn, "loops", values, {"id": loop.id}):
        raise LoopNotFound(f"no loop with id {loop.id!r}")
    return stored


def _insert_events(conn: sqlite3.Connection, loop_id: str, batch: Events) -> list[EventRecord]:
    stored = []
    for event_type, data in batch:
        timestamp = _now()
        values = {"loop_id": loop_id, "event_type": event_type, "data": data}
        seq = direct.insert(conn, "events", values | {"timestamp": timestamp})
        stored.append(EventRecord(seq, loop_id, event_type, data, timestamp))
    return stored


def _insert_checkpoint(
    conn: sqlite3.Connection,
    loop_id: str,
    iteration: int,
    commit_sha: str,
    snapshot: dict[str, Any],
) -> CheckpointRecord:
    record = CheckpointRecord(0, loop_id, iteration, commit_sha, snapshot, _now())
    values = record_values(record)
    del values["id"]
    return replace(record, id=direct.insert(conn, "checkpoints", values))


def _now() -> datetime:
    return datetime.now(UTC)
