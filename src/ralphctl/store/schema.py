"""The tables, as SQLAlchemy Core metadata; column names match the fields in ``records.py``.

Migrations create exactly this schema (a test compares them); ``revision.HEAD_REVISION`` names
the newest migration, so that opening a current database needs one query and no Alembic import.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware datetime stored as UTC, read back aware on every backend.

    SQLite keeps no offset, so values are written as naive UTC and tagged UTC on the way out.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value.isoformat()}: store timezone-aware times")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def _json() -> JSON:
    return JSON(none_as_null=True)


def _loop_fk() -> ForeignKey:
    return ForeignKey("loops.id", ondelete="CASCADE")


#: An auto-increment key that is never reused: AUTOINCREMENT on SQLite, an identity elsewhere.
_SERIAL: Any = BigInteger().with_variant(Integer(), "sqlite")

metadata = MetaData()

loops = Table(
    "loops",
    metadata,
    Column("id", String, primary_key=True),
    Column("name", String, nullable=False),
    Column("mode", String, nullable=False),
    Column("agent", String, nullable=False),
    Column("workdir", Text, nullable=False),
    Column("task", Text, nullable=False),
    Column("workflow", String),
    Column("config", _json(), nullable=False),
    Column("status", String, nullable=False),
    Column("stop_reason", String),
    Column("stop_detail", Text),
    Column("iteration", Integer, nullable=False),
    Column("cost_usd", Float, nullable=False),
    Column("tokens_input", BigInteger, nullable=False),
    Column("tokens_output", BigInteger, nullable=False),
    Column("tokens_cache_read", BigInteger, nullable=False),
    Column("tokens_cache_write", BigInteger, nullable=False),
    Column("consecutive_errors", Integer, nullable=False),
    Column("runtime_s", Float, nullable=False),
    Column("breaker_state", _json()),
    Column("rate_limited_until", UTCDateTime),
    Column("agent_session_id", String),
    Column("runner_pid", Integer),
    Column("runner_host", String),
    Column("created_at", UTCDateTime, nullable=False),
    Column("started_at", UTCDateTime),
    Column("ended_at", UTCDateTime),
    Column("updated_at", UTCDateTime),
    Index("ix_loops_status", "status"),
)

# The primary key (loop_id, n) also serves every lookup by loop_id.
iterations = Table(
    "iterations",
    metadata,
    Column("loop_id", String, _loop_fk(), primary_key=True),
    Column("n", Integer, primary_key=True),
    Column("status", String, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("completed_at", UTCDateTime),
    Column("duration_ms", BigInteger),
    Column("tokens_input", BigInteger, nullable=False),
    Column("tokens_output", BigInteger, nullable=False),
    Column("tokens_cache_read", BigInteger, nullable=False),
    Column("tokens_cache_write", BigInteger, nullable=False),
    Column("cost_usd", Float),
    Column("cost_source", String),
    Column("exit_code", Integer),
    Column("completion_signal_found", Boolean, nullable=False),
    Column("blocked_reason", Text),
    Column("error_message", Text),
    Column("output_summary", Text, nullable=False),
    Column("files_changed", Integer),
    Column("agent_session_id", String),
    Column("num_turns", Integer),
    Column("permission_denials", _json(), nullable=False),
    Column("gate_results", _json()),
    Column("signals", _json()),
    Column("agent_pid", Integer),
    Column("agent_started_at", UTCDateTime),
    Index("ix_iterations_started_at", "started_at"),
)

events = Table(
    "events",
    metadata,
    Column("seq", _SERIAL, Identity(), primary_key=True),
    Column("loop_id", String, _loop_fk(), nullable=False),
    Column("event_type", String, nullable=False),
    Column("data", _json(), nullable=False),
    Column("timestamp", UTCDateTime, nullable=False),
    Index("ix_events_loop_id_seq", "loop_id", "seq"),
    sqlite_autoincrement=True,
)

errors = Table(
    "errors",
    metadata,
    Column("id", _SERIAL, Identity(), primary_key=True),
    Column("loop_id", String, _loop_fk(), nullable=False),
    Column("iteration", Integer),
    Column("error_type", String, nullable=False),
    Column("message", Text, nullable=False),
    Column("context", _json(), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_errors_loop_id", "loop_id"),
    sqlite_autoincrement=True,
)

checkpoints = Table(
    "checkpoints",
    metadata,
    Column("id", _SERIAL, Identity(), primary_key=True),
    Column("loop_id", String, _loop_fk(), nullable=False),
    Column("iteration", Integer, nullable=False),
    Column("commit_sha", String, nullable=False),
    Column("snapshot", _json(), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_checkpoints_loop_id", "loop_id"),
    sqlite_autoincrement=True,
)

# One iteration's raw agent output (stdout, every byte), as zlib-compressed chunks in order
# (``seq`` from 0), each decompressible alone: written as the output arrives, so what an agent
# printed survives a runner killed at any moment. ``raw_bytes`` is the chunk's size unpacked.
transcript_chunks = Table(
    "transcript_chunks",
    metadata,
    Column("loop_id", String, _loop_fk(), primary_key=True),
    Column("n", Integer, primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("data", LargeBinary, nullable=False),
    Column("raw_bytes", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

# The notification outbox (``ralphctl.notify.outbox``): one row per (event, channel), enqueued
# by a follower of ``events`` whose position is ``notification_cursor``; delivered by whichever
# deliverer claims the row (``claim`` and ``claimed_until`` are its lease). ``event_seq`` has no
# foreign key: event retention may delete the event before its notification is delivered.
notifications = Table(
    "notifications",
    metadata,
    Column("id", _SERIAL, Identity(), primary_key=True),
    Column("loop_id", String, _loop_fk(), nullable=False),
    Column("event_seq", BigInteger, nullable=False),
    Column("event", String, nullable=False),
    Column("channel", String, nullable=False),
    Column("payload", _json(), nullable=False),
    Column("status", String, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", UTCDateTime, nullable=False),
    Column("claim", String),
    Column("claimed_until", UTCDateTime),
    Column("last_error", Text),
    Column("outcomes", _json(), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("delivered_at", UTCDateTime),
    UniqueConstraint("event_seq", "channel", name="uq_notifications_event_channel"),
    Index("ix_notifications_status_next_attempt_at", "status", "next_attempt_at"),
    sqlite_autoincrement=True,
)

# How far the outbox's follower has read ``events``: one row per follower name.
notification_cursor = Table(
    "notification_cursor",
    metadata,
    Column("name", String, primary_key=True),
    Column("seq", BigInteger, nullable=False),
)

# Fleet mode (``ralphctl.fleet``, which runs on PostgreSQL only; the tables exist on every
# backend so that one schema serves both). The lease by which one worker holds a loop:
# ``generation`` grows by one with each acquisition and fences out every earlier holder;
# ``worker`` is None once released. Times are the database server's clock. ``control_request``:
# a pause or stop asked of the loop's holder, kept until a controller settles the loop.
loop_leases = Table(
    "loop_leases",
    metadata,
    Column("loop_id", String, _loop_fk(), primary_key=True),
    Column("worker", String),
    Column("generation", BigInteger, nullable=False),
    Column("acquired_at", UTCDateTime),
    Column("expires_at", UTCDateTime),
    Column("control_request", String),
)

# Where a fleet loop's work lives (its repository and base branch; it works on the branch
# ``ralph/<loop-id>``) and the labels a worker needs to run it.
fleet_loops = Table(
    "fleet_loops",
    metadata,
    Column("loop_id", String, _loop_fk(), primary_key=True),
    Column("repo_url", String, nullable=False),
    Column("base_branch", String, nullable=False),
    Column("labels", _json(), nullable=False),
)

# The fleet's workers, one row per name, as each registered itself; ``heartbeat_at`` (the
# database server's clock) says whether it is alive.
workers = Table(
    "workers",
    metadata,
    Column("name", String, primary_key=True),
    Column("labels", _json(), nullable=False),
    Column("concurrency", Integer, nullable=False),
    Column("version", String, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("heartbeat_at", UTCDateTime, nullable=False),
)
