"""``CoreStore``: the store's queries in SQLAlchemy Core, for every database.

``repository.Store`` is the store's face; it hands its calls here, but for the hot path on a
SQLite database (``sqlite_direct``), which is spared importing SQLAlchemy. Every write is
committed before its method returns; errors reach callers as ``StoreError``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Insert,
    Row,
    Table,
    bindparam,
    case,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.exc import SQLAlchemyError

from ralphctl.domain.costs import CostSource
from ralphctl.domain.states import LoopStatus
from ralphctl.store.database import cause_of, open_engine
from ralphctl.store.errors import LoopNotFound, StoreError
from ralphctl.store.records import (
    CheckpointRecord,
    ErrorRecord,
    EventRecord,
    IterationRecord,
    LoopRecord,
    RecoveredUsage,
    loop_from_row,
    loop_summary,
    loop_values,
    record_values,
)
from ralphctl.store.repository import INTERRUPTED_MESSAGE
from ralphctl.store.schema import (
    checkpoints,
    errors,
    events,
    iterations,
    loops,
    transcript_chunks,
)

MIN_PREFIX = 4

_EVENTS_LOCK_KEY = 0x7261_6C65
_LOOP_KEYS = frozenset({"id", "created_at"})
_ITERATION_KEYS = frozenset({"loop_id", "n"})
_ENUM_COLUMNS = frozenset({"status", "stop_reason"})

# Hot-path statements are built once: SQLAlchemy then reuses their compiled form (the SET
# clause comes from the parameter keys), which keeps a loop iteration's bookkeeping cheap.
_UPDATE_LOOP = loops.update().where(loops.c.id == bindparam("key_id"))
_UPDATE_ITERATION = iterations.update().where(
    iterations.c.loop_id == bindparam("key_loop_id"), iterations.c.n == bindparam("key_n")
)
_INSERT_ITERATION = iterations.insert()
_INSERT_EVENT = events.insert().returning(events.c.seq)
_INSERT_CHUNK = insert(transcript_chunks)


class CoreStore:
    """One database through a SQLAlchemy engine; safe to share between threads."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @classmethod
    def open(cls, url: str) -> CoreStore:
        """Open (creating or upgrading the schema if needed) the database at ``url``."""
        return cls(open_engine(url))

    def close(self) -> None:
        self._engine.dispose()

    # Loops

    def create_loop(self, loop: LoopRecord) -> LoopRecord:
        stored = replace(loop, updated_at=_now())
        with self.transaction("create the loop") as conn:
            conn.execute(insert(loops).values(loop_values(stored)))
        return stored

    def get_loop(self, loop_id_or_prefix: str) -> LoopRecord:
        """The loop with this exact id, else the one loop whose id starts with it (>= 4 chars)."""
        key = loop_id_or_prefix
        with self.transaction("read the loop") as conn:
            row = conn.execute(select(loops).where(loops.c.id == key)).first()
            if row is None and len(key) >= MIN_PREFIX:
                prefixed = func.substr(loops.c.id, 1, len(key)) == key
                rows = conn.execute(select(loops).where(prefixed).order_by(loops.c.id)).all()
                if len(rows) > 1:
                    ids = ", ".join(r.id for r in rows)
                    raise LoopNotFound(f"loop id prefix {key!r} is ambiguous: it matches {ids}")
                row = rows[0] if rows else None
        if row is None:
            hint = (
                f" (a prefix needs at least {MIN_PREFIX} characters)"
                if len(key) < MIN_PREFIX
                else ""
            )
            raise LoopNotFound(f"no loop with id {key!r}{hint}")
        return _loop(row)

    def list_loops(
        self,
        statuses: Collection[LoopStatus] | None = None,
        limit: int | None = None,
        *,
        workdir: str | None = None,
    ) -> list[LoopRecord]:
        """Loops, newest first, optionally only those in ``statuses`` (and in ``workdir``)."""
        query = select(loops).order_by(loops.c.created_at.desc(), loops.c.id.desc()).limit(limit)
        if statuses is not None:
            query = query.where(loops.c.status.in_([str(s) for s in statuses]))
        if workdir is not None:
            query = query.where(loops.c.workdir == workdir)
        with self.transaction("list loops") as conn:
            return [_loop(row) for row in conn.execute(query)]

    def save_loop(self, loop: LoopRecord) -> LoopRecord:
        """Write back every mutable field; returns the record with its new ``updated_at``.

        For a loop's only writer (its runner). Writers that may overlap (the Stop hook's
        history) use ``create_loop_once``, ``add_finished_iteration`` and ``end_loop``, whose
        updates are guarded, so the row never goes back to a state read before."""
        with self.transaction("save the loop") as conn:
            return _update_loop(conn, loop)

    def save_loop_with_events(
        self, loop: LoopRecord, events: Sequence[tuple[str, dict[str, Any]]]
    ) -> tuple[LoopRecord, list[EventRecord]]:
        """``save_loop`` and its ``events`` in one transaction: the saved record and the
        stored events."""
        with self.transaction("save the loop") as conn:
            return _update_loop(conn, loop), _insert_events(conn, loop.id, events)

    def create_loop_once(self, loop: LoopRecord) -> bool:
        """Store ``loop`` unless a loop with its id exists; True if this call created it."""
        stored = replace(loop, updated_at=_now())
        with self.transaction("create the loop") as conn:
            statement = _insert_once(conn, loops, loop_values(stored), [loops.c.id])
            return bool(conn.execute(statement).rowcount)

    def add_finished_iteration(
        self,
        iteration: IterationRecord,
        advance: Mapping[str, Any],
        events: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> list[EventRecord] | None:
        """Store an iteration that is over, with its events, unless it is stored already, and
        move its loop forward to it, in one transaction.

        The loop gets ``advance`` (its ``iteration`` = this iteration's number, and any other
        columns) only while it is behind: writers arriving in any order never move it back.
        Returns the stored events, or None (nothing written) if the iteration was there.
        """
        n = iteration.n
        with self.transaction(f"record iteration {n}") as conn:
            keys = [iterations.c.loop_id, iterations.c.n]
            statement = _insert_once(conn, iterations, record_values(iteration), keys)
            if not conn.execute(statement).rowcount:
                return None
            behind = (loops.c.id == iteration.loop_id) & (loops.c.iteration < n)
            moved = {**advance, "iteration": n, "updated_at": _now()}
            conn.execute(update(loops).where(behind).values(moved))
            return _insert_events(conn, iteration.loop_id, events)

    def end_loop(
        self,
        loop_id: str,
        changes: Mapping[str, Any],
        events: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> list[EventRecord] | None:
        """Give a loop that is still active its final ``changes`` (status, stop reason…) and
        ``events``, in one transaction. Returns the stored events, or None (nothing written)
        if it had ended already: a late or repeated writer never changes how a loop ended."""
        active = [str(status) for status in LoopStatus if status.is_active]
        values = {
            key: str(v) if key in _ENUM_COLUMNS and v is not None else v
            for key, v in changes.items()
        }
        with self.transaction("record the end of the loop") as conn:
            still = (loops.c.id == loop_id) & loops.c.status.in_(active)
            ended = conn.execute(
                update(loops).where(still).values({**values, "updated_at": _now()})
            )
            if not ended.rowcount:
                return None
            return _insert_events(conn, loop_id, events)

    # Iterations

    def begin_iteration(
        self, iteration: IterationRecord, events: Sequence[tuple[str, dict[str, Any]]] = ()
    ) -> list[EventRecord]:
        """Record that an iteration started (status ``running``) and its ``events``, in one
        transaction. Returns the stored events, for publishing."""
        values = record_values(replace(iteration, status="running"))
        with self.transaction(f"record the start of iteration {iteration.n}") as conn:
            conn.execute(_INSERT_ITERATION, values)
            return _insert_events(conn, iteration.loop_id, events)

    def complete_iteration(
        self,
        iteration: IterationRecord,
        loop: LoopRecord,
        events: Sequence[tuple[str, dict[str, Any]]] = (),
        checkpoint: str | None = None,
    ) -> list[EventRecord]:
        """Write the finished iteration, the loop's new totals, its events and the commit sha of
        its ``checkpoint`` (if one was made) in one transaction.

        Returns the stored events (with their seqs), for publishing.
        """
        if iteration.loop_id != loop.id:
            raise ValueError(f"iteration of loop {iteration.loop_id!r} given with loop {loop.id!r}")
        values = {k: v for k, v in record_values(iteration).items() if k not in _ITERATION_KEYS}
        values |= {"key_loop_id": iteration.loop_id, "key_n": iteration.n}
        with self.transaction(f"record iteration {iteration.n}") as conn:
            result = conn.execute(_UPDATE_ITERATION, values)
            if result.rowcount == 0:
                raise StoreError(f"iteration {iteration.n} of loop {loop.id!r} was never begun")
            _update_loop(conn, loop)
            if checkpoint is not None:
                self.checkpoint_in(conn, loop.id, iteration.n, checkpoint, loop_summary(loop))
            return _insert_events(conn, loop.id, events)

    def set_iteration_agent(self, loop_id: str, n: int, pid: int, started_at: datetime) -> None:
        """Record the agent process of an iteration begun before its agent started."""
        values = {"agent_pid": pid, "agent_started_at": started_at}
        with self.transaction(f"record the agent of iteration {n}") as conn:
            conn.execute(_UPDATE_ITERATION, values | {"key_loop_id": loop_id, "key_n": n})

    def running_iterations(self, loop_id: str) -> list[IterationRecord]:
        """The loop's iterations whose status is ``running``, in order."""
        query = (
            select(iterations)
            .where(iterations.c.loop_id == loop_id, iterations.c.status == "running")
            .order_by(iterations.c.n)
        )
        with self.transaction("read running iterations") as conn:
            return [IterationRecord(**row._mapping) for row in conn.execute(query)]

    def interrupt_running_iterations(
        self,
        loop_id: str,
        notes: Mapping[int, str] | None = None,
        recovered: Mapping[int, RecoveredUsage] | None = None,
    ) -> list[int]:
        """Mark iterations left ``running`` (by a runner that died) as interrupted; ``notes``
        adds to the error message of some of them (by number), ``recovered`` records what some
        of them spent (and adds it to the loop's totals), all in one transaction."""
        query = (
            update(iterations)
            .where(iterations.c.loop_id == loop_id, iterations.c.status == "running")
            .values(status="interrupted", completed_at=_now(), error_message=INTERRUPTED_MESSAGE)
            .returning(iterations.c.n)
        )
        with self.transaction("mark running iterations interrupted") as conn:
            interrupted = sorted(conn.execute(query).scalars())
            for n, note in (notes or {}).items():
                if n in interrupted:
                    message = f"{INTERRUPTED_MESSAGE}; {note}"
                    keys = {"key_loop_id": loop_id, "key_n": n}
                    conn.execute(_UPDATE_ITERATION, {"error_message": message} | keys)
            for n, usage in (recovered or {}).items():
                if n in interrupted:
                    _record_recovered(conn, loop_id, n, usage)
            return interrupted

    def record_unrecorded(
        self,
        iteration: IterationRecord,
        events: Sequence[tuple[str, dict[str, Any]]] = (),
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
        n = iteration.n
        key = (iterations.c.loop_id == iteration.loop_id) & (iterations.c.n == n)
        finished = iteration.status != "running"
        with self.transaction(f"record iteration {n} kept outside the database") as conn:
            status = conn.execute(select(iterations.c.status).where(key)).scalar_one_or_none()
            if status is None:
                conn.execute(_INSERT_ITERATION, record_values(iteration))
            elif status == "running" and finished:
                values = {
                    k: v for k, v in record_values(iteration).items() if k not in _ITERATION_KEYS
                }
                conn.execute(update(iterations).where(key).values(values))
            else:
                return None
            if finished:
                loop = loops.c.id == iteration.loop_id
                newest = conn.execute(select(loops.c.iteration).where(loop)).scalar_one() < n
                _grow_loop(conn, iteration)
                if newest and loop_state:
                    conn.execute(update(loops).where(loop).values(dict(loop_state)))
                if checkpoint is not None:
                    snapshot = {"iteration": n}
                    self.checkpoint_in(conn, iteration.loop_id, n, checkpoint, snapshot)
            return _insert_events(conn, iteration.loop_id, events)

    def iterations(self, loop_id: str) -> list[IterationRecord]:
        query = select(iterations).where(iterations.c.loop_id == loop_id).order_by(iterations.c.n)
        with self.transaction("read iterations") as conn:
            return [IterationRecord(**row._mapping) for row in conn.execute(query)]

    def iteration_starts_since(self, since: datetime, loop_id: str | None = None) -> list[datetime]:
        """When iterations started at or after ``since``, oldest first; every loop's when
        ``loop_id`` is None. What calls-per-hour limits count."""
        started = iterations.c.started_at
        query = select(started).where(started >= since).order_by(started)
        if loop_id is not None:
            query = query.where(iterations.c.loop_id == loop_id)
        with self.transaction("read when iterations started") as conn:
            return list(conn.execute(query).scalars())

    # Events and errors

    def append_event(self, loop_id: str, event_type: str, data: dict[str, Any]) -> EventRecord:
        (stored,) = self.append_events(loop_id, [(event_type, data)])
        return stored

    def append_events(
        self, loop_id: str, batch: Sequence[tuple[str, dict[str, Any]]]
    ) -> list[EventRecord]:
        """Store several events in one transaction, in order."""
        with self.transaction("record events") as conn:
            return _insert_events(conn, loop_id, batch)

    def events_since(
        self, seq: int, loop_id: str | None = None, limit: int = 1000
    ) -> list[EventRecord]:
        """Events after ``seq`` (0 for all), oldest first, at most ``limit``."""
        query = select(events).where(events.c.seq > seq).order_by(events.c.seq).limit(limit)
        if loop_id is not None:
            query = query.where(events.c.loop_id == loop_id)
        with self.transaction("read events") as conn:
            return [EventRecord(**row._mapping) for row in conn.execute(query)]

    def events_of(self, loop_id: str, types: Sequence[str], after: int = 0) -> list[EventRecord]:
        """The loop's events of these types after seq ``after`` (0 for all), oldest first."""
        query = (
            select(events)
            .where(
                events.c.loop_id == loop_id,
                events.c.event_type.in_(list(types)),
                events.c.seq > after,
            )
            .order_by(events.c.seq)
        )
        with self.transaction("read events") as conn:
            return [EventRecord(**row._mapping) for row in conn.execute(query)]

    def add_error(
        self,
        loop_id: str,
        iteration: int | None,
        error_type: str,
        message: str,
        context: dict[str, Any],
    ) -> ErrorRecord:
        created_at = _now()
        values = {
            "loop_id": loop_id,
            "iteration": iteration,
            "error_type": error_type,
            "message": message,
            "context": context,
            "created_at": created_at,
        }
        with self.transaction("record the error") as conn:
            error_id = conn.execute(
                insert(errors).values(values).returning(errors.c.id)
            ).scalar_one()
        return ErrorRecord(error_id, loop_id, iteration, error_type, message, context, created_at)

    def errors(self, loop_id: str) -> list[ErrorRecord]:
        query = select(errors).where(errors.c.loop_id == loop_id).order_by(errors.c.id)
        with self.transaction("read errors") as conn:
            return [ErrorRecord(**row._mapping) for row in conn.execute(query)]

    # Checkpoints

    def add_checkpoint(
        self, loop_id: str, iteration: int, commit_sha: str, snapshot: dict[str, Any]
    ) -> CheckpointRecord:
        with self.transaction("record the checkpoint") as conn:
            return self.checkpoint_in(conn, loop_id, iteration, commit_sha, snapshot)

    def checkpoint_in(
        self,
        conn: Connection,
        loop_id: str,
        iteration: int,
        commit_sha: str,
        snapshot: dict[str, Any],
    ) -> CheckpointRecord:
        """A checkpoint's row, in the caller's transaction."""
        created_at = _now()
        values = {
            "loop_id": loop_id,
            "iteration": iteration,
            "commit_sha": commit_sha,
            "snapshot": snapshot,
            "created_at": created_at,
        }
        checkpoint_id = conn.execute(
            insert(checkpoints).values(values).returning(checkpoints.c.id)
        ).scalar_one()
        return CheckpointRecord(checkpoint_id, loop_id, iteration, commit_sha, snapshot, created_at)

    def checkpoints(self, loop_id: str) -> list[CheckpointRecord]:
        query = (
            select(checkpoints).where(checkpoints.c.loop_id == loop_id).order_by(checkpoints.c.id)
        )
        with self.transaction("read checkpoints") as conn:
            return [CheckpointRecord(**row._mapping) for row in conn.execute(query)]

    # Transcripts

    def add_transcript_chunk(self, values: Mapping[str, Any]) -> None:
        n = values["n"]
        with self.transaction(f"record the transcript of iteration {n}") as conn:
            conn.execute(_INSERT_CHUNK, values)

    def last_transcript_seq(self, loop_id: str, n: int) -> int | None:
        query = select(func.max(transcript_chunks.c.seq)).where(
            transcript_chunks.c.loop_id == loop_id, transcript_chunks.c.n == n
        )
        with self.transaction(f"read the transcript of iteration {n}") as conn:
            return conn.execute(query).scalar()

    @contextmanager
    def transaction(self, doing: str) -> Iterator[Connection]:
        """A connection whose work is committed on success and rolled back on any error, which
        becomes ``StoreError("cannot <doing>: …")``. For queries kept in their own modules
        (``metrics``, ``retention``)."""
        try:
            with self._engine.begin() as conn:
                yield conn
        except (SQLAlchemyError, TypeError) as exc:  # psycopg raises TypeError for bad JSON
            raise StoreError(f"cannot {doing}: {cause_of(exc)}") from exc


def _update_loop(conn: Connection, loop: LoopRecord) -> LoopRecord:
    stored = replace(loop, updated_at=_now())
    values = {k: v for k, v in loop_values(stored).items() if k not in _LOOP_KEYS}
    result = conn.execute(_UPDATE_LOOP, values | {"key_id": loop.id})
    if result.rowcount == 0:
        raise LoopNotFound(f"no loop with id {loop.id!r}")
    return stored


def _record_recovered(conn: Connection, loop_id: str, n: int, usage: RecoveredUsage) -> None:
    """The iteration's usage, and the loop's totals grown by it (atomically, in the database)."""
    tokens = {
        "tokens_input": usage.tokens_input,
        "tokens_output": usage.tokens_output,
        "tokens_cache_read": usage.tokens_cache_read,
        "tokens_cache_write": usage.tokens_cache_write,
    }
    keys = {"key_loop_id": loop_id, "key_n": n}
    source = str(CostSource.RECOVERED) if usage.cost_usd is not None else None
    spent = {"cost_usd": usage.cost_usd, "cost_source": source}
    session = {"agent_session_id": usage.agent_session_id} if usage.agent_session_id else {}
    conn.execute(_UPDATE_ITERATION, tokens | spent | session | keys)
    grown = {name: loops.c[name] + value for name, value in tokens.items()}
    grown["cost_usd"] = loops.c.cost_usd + (usage.cost_usd or 0.0)
    conn.execute(update(loops).where(loops.c.id == loop_id).values(grown))


def _grow_loop(conn: Connection, done: IterationRecord) -> None:
    """The loop's totals grown by a finished iteration, its count moved up to it."""
    grown = {
        name: loops.c[name] + getattr(done, name)
        for name in ("tokens_input", "tokens_output", "tokens_cache_read", "tokens_cache_write")
    }
    grown["cost_usd"] = loops.c.cost_usd + (done.cost_usd or 0.0)
    grown["iteration"] = case((loops.c.iteration < done.n, done.n), else_=loops.c.iteration)
    conn.execute(update(loops).where(loops.c.id == done.loop_id).values(grown))


def _insert_once(
    conn: Connection, table: Table, values: Mapping[str, Any], keys: Sequence[Column[Any]]
) -> Insert:
    """``INSERT … ON CONFLICT (keys) DO NOTHING`` in the connection's dialect."""
    if conn.dialect.name == "postgresql":
        # Imported here: a connected PostgreSQL engine has loaded it already, and a SQLite
        # run (``ralphctl run``'s default) is spared its import (tens of ms of CPU).
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table).values(values).on_conflict_do_nothing(index_elements=keys)
    return sqlite.insert(table).values(values).on_conflict_do_nothing(index_elements=keys)


def _insert_events(
    conn: Connection, loop_id: str, batch: Sequence[tuple[str, dict[str, Any]]]
) -> list[EventRecord]:
    if batch and conn.dialect.name == "postgresql":
        # Take seqs and commit in one order, so that a reader resuming after a seq never
        # misses a smaller one committed later (SQLite serialises writers anyway).
        conn.execute(select(func.pg_advisory_xact_lock(_EVENTS_LOCK_KEY)))
    stored = []
    for event_type, data in batch:
        timestamp = _now()
        values = {
            "loop_id": loop_id,
            "event_type": event_type,
            "data": data,
            "timestamp": timestamp,
        }
        seq = conn.execute(_INSERT_EVENT, values).scalar_one()
        stored.append(EventRecord(seq, loop_id, event_type, data, timestamp))
    return stored


def _loop(row: Row[Any]) -> LoopRecord:
    return loop_from_row(dict(row._mapping))


def _now() -> datetime:
    return datetime.now(UTC)
