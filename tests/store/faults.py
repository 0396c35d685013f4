"""Store faults for tests: a transaction that fails after some of its writes."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from ralphctl.store import repository
from ralphctl.store.records import EventRecord


def fail_storing_events_of(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every SQLite transaction that stores a ``kind`` event fails there (a disk I/O error),
    after the writes it made before: only a rollback undoes them."""
    insert_events = repository._insert_events

    def failing(conn: sqlite3.Connection, loop_id: str, batch: Any) -> list[EventRecord]:
        if any(event_type == kind for event_type, _ in batch):
            raise sqlite3.OperationalError("disk I/O error")
        return insert_events(conn, loop_id, batch)

    monkeypatch.setattr(repository, "_insert_events", failing)
