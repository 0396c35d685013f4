"""SQLite through the standard library: ralphctl's connection settings, and rows written and
read exactly as SQLAlchemy's column types store them.

``ralphctl run`` opens its store while its first agent runs. Importing SQLAlchemy costs about
200 ms of CPU, several times a short agent run, so the run would wait for it. On a SQLite
database at the head revision, the store's hot path (``Store``: a loop's rows, its
iterations, events, checkpoints, errors and transcript chunks) goes through ``sqlite3``
here instead, and SQLAlchemy is imported only by the first other call. The schema
stays ``schema.py``'s and Alembic's: a database that is not at the head revision is left to
them. Values are stored as SQLAlchemy stores them on SQLite (a test writes the same records
both ways and compares the rows): datetimes as naive UTC text ``YYYY-MM-DD HH:MM:SS.ffffff``,
JSON as ``json.dumps`` text (None as NULL), booleans as 0/1, the rest as given.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ralphctl.store.revision import HEAD_REVISION

BUSY_TIMEOUT_S = 5.0
_PRAGMAS = ("PRAGMA synchronous = NORMAL", "PRAGMA foreign_keys = ON")

#: The columns whose values are converted, per table (a test checks them against schema.py).
DATETIME_COLUMNS: Mapping[str, frozenset[str]] = {
    "loops": frozenset(
        {"rate_limited_until", "created_at", "started_at", "ended_at", "updated_at"}
    ),
    "iterations": frozenset({"started_at", "completed_at", "agent_started_at"}),
    "events": frozenset({"timestamp"}),
    "errors": frozenset({"created_at"}),
    "checkpoints": frozenset({"created_at"}),
    "transcript_chunks": frozenset({"created_at"}),
}
JSON_COLUMNS: Mapping[str, frozenset[str]] = {
    "loops": frozenset({"config", "breaker_state"}),
    "iterations": frozenset({"permission_denials", "gate_results", "signals"}),
    "events": frozenset({"data"}),
    "errors": frozenset({"context"}),
    "checkpoints": frozenset({"snapshot"}),
    "transcript_chunks": frozenset(),
}
BOOLEAN_COLUMNS: Mapping[str, frozenset[str]] = {
    "loops": frozenset(),
    "iterations": frozenset({"completion_signal_found"}),
    "events": frozenset(),
    "errors": frozenset(),
    "checkpoints": frozenset(),
    "transcript_chunks": frozenset(),
}


def apply_settings(connection: sqlite3.Connection) -> None:
    """ralphctl's settings for every SQLite connection: busy timeout, WAL, synchronous NORMAL
    (durable at each commit in WAL mode but for a power loss), foreign keys."""
    cursor = connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        _enter_wal(cursor)
        for pragma in _PRAGMAS:
            cursor.execute(pragma)
    finally:
        cursor.close()


def _enter_wal(cursor: sqlite3.Cursor) -> None:
    """Switch to WAL (a persistent setting, so usually a no-op).

    The switch needs an exclusive lock, and SQLite does not wait for it through
    ``busy_timeout``: while other processes are opening a new database at once it can fail with
    "database is locked". Retried here for as long as the busy timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.001
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


class SqliteDirect:
    """A ralphctl database at the head revision, safe to share between threads: each thread
    has a connection of its own (as SQLAlchemy's pool gives), so a reader never waits for a
    writer that waits for a foreign lock."""

    def __init__(self, path: Path, first: sqlite3.Connection) -> None:
        self._path = path
        self._local = threading.local()
        self._local.connection = first
        self._opened = [first]
        self._guard = threading.Lock()

    @classmethod
    def open(cls, path: Path) -> SqliteDirect | None:
        """The database at ``path``; None when its schema is not at the head revision (none
        yet, or older): Alembic must create or upgrade it first. ``sqlite3.Error`` if it
        cannot be opened."""
        connection = _connect(path)
        try:
            revision = _revision(connection)
        except BaseException:
            connection.close()
            raise
        if revision != HEAD_REVISION:
            connection.close()
            return None
        return cls(path, connection)

    def close(self) -> None:
        """Close every thread's connection (the last one folds the write-ahead log back)."""
        with self._guard:
            for connection in self._opened:
                connection.close()
            self._opened.clear()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection inside a write transaction (taken at once, waiting up to
        the busy timeout for other writers), committed on success, rolled back on any error."""
        connection = self._connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    def reading(self) -> sqlite3.Connection:
        """This thread's connection, for reads (each a statement of its own)."""
        return self._connection()

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = _connect(self._path)
            self._local.connection = connection
            with self._guard:
                self._opened.append(connection)
        return connection


def _connect(path: Path) -> sqlite3.Connection:
    # check_same_thread off: ``close`` closes every thread's connection from one thread.
    connection = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
    )
    try:
        apply_settings(connection)
    except BaseException:
        connection.close()
        raise
    return connection


def insert(connection: sqlite3.Connection, table: str, values: Mapping[str, Any]) -> int:
    """Insert one row; its rowid (the auto-increment key of the tables that have one)."""
    names = list(values)
    sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
    cursor = connection.execute(sql, encode(table, values))
    return int(cursor.lastrowid or 0)


def update(
    connection: sqlite3.Connection, table: str, values: Mapping[str, Any], key: Mapping[str, Any]
) -> int:
    """Set ``values`` on the rows matching ``key`` (column = value, all of them); how many."""
    assignments = ", ".join(f"{name} = ?" for name in values)
    sql = f"UPDATE {table} SET {assignments} WHERE {_matching(key)}"
    cursor = connection.execute(sql, [*encode(table, values), *encode(table, key)])
    return cursor.rowcount


def select(
    connection: sqlite3.Connection, table: str, key: Mapping[str, Any], order_by: str
) -> list[dict[str, Any]]:
    """Every column of the rows matching ``key``, ordered by the column ``order_by``."""
    sql = f"SELECT * FROM {table} WHERE {_matching(key)} ORDER BY {order_by}"
    return rows(connection, table, sql, encode(table, key))


def rows(
    connection: sqlite3.Connection, table: str, sql: str, parameters: Sequence[Any]
) -> list[dict[str, Any]]:
    """The rows of query ``sql`` on ``table``, decoded (``decode``)."""
    cursor = connection.execute(sql, parameters)
    names = [column[0] for column in cursor.description]
    return [decode(table, dict(zip(names, row, strict=True))) for row in cursor]


def scalar(connection: sqlite3.Connection, sql: str, parameters: tuple[Any, ...]) -> Any:
    """The first column of the first row of ``sql``; None without rows."""
    row = connection.execute(sql, parameters).fetchone()
    return None if row is None else row[0]


def encode(table: str, values: Mapping[str, Any]) -> list[Any]:
    """The values as SQLAlchemy's column types would bind them on SQLite."""
    datetimes, documents, flags = (
        DATETIME_COLUMNS[table],
        JSON_COLUMNS[table],
        BOOLEAN_COLUMNS[table],
    )
    encoded: list[Any] = []
    for name, value in values.items():
        if value is None:
            encoded.append(None)
        elif name in datetimes:
            encoded.append(_datetime_text(value))
        elif name in documents:
            encoded.append(json.dumps(value))
        elif name in flags:
            encoded.append(1 if value else 0)
        else:
            encoded.append(value)
    return encoded


def decode(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """A row as SQLAlchemy's column types would return it: aware UTC datetimes, parsed JSON,
    booleans."""
    for name in DATETIME_COLUMNS[table]:
        if row.get(name) is not None:
            row[name] = datetime.fromisoformat(row[name]).replace(tzinfo=UTC)
    for name in JSON_COLUMNS[table]:
        if row.get(name) is not None:
            row[name] = json.loads(row[name])
    for name in BOOLEAN_COLUMNS[table]:
        if row.get(name) is not None:
            row[name] = bool(row[name])
    return row


def _datetime_text(value: datetime) -> str:
    if value.tzinfo is None:
        raise ValueError(f"naive datetime {value.isoformat()}: store timezone-aware times")
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


def _matching(key: Mapping[str, Any]) -> str:
    return " AND ".join(f"{name} = ?" for name in key)


def _revision(connection: sqlite3.Connection) -> str | None:
    try:
        row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
    return None if row is None else str(row[0])
