"""The fleet's workers in PostgreSQL: each registers under its name, beats while it runs, and
leaves when it drains; a worker whose last beat is older than ``stale_after`` is not alive.

Times are the database server's clock, as for leases. A worker that registers under a name
already there (a restart) replaces that row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert

from ralphctl.fleet.backbone import database_now, require_postgresql
from ralphctl.store.schema import workers


@dataclass(frozen=True, slots=True)
class FleetWorker:
    """One worker as registered: its labels (``gpu``, ``agent=codex``) and loop slots."""

    name: str
    labels: tuple[str, ...]
    concurrency: int
    version: str
    started_at: datetime
    heartbeat_at: datetime

    def is_alive(self, now: datetime, stale_after: timedelta) -> bool:
        """Whether the worker beat within ``stale_after`` before ``now``."""
        return now - self.heartbeat_at < stale_after


def register(
    conn: Connection, name: str, labels: Sequence[str], concurrency: int, version: str
) -> FleetWorker:
    """Record worker ``name`` as started now; ValueError for fewer than one loop slot."""
    require_postgresql(conn)
    if concurrency < 1:
        raise ValueError(f"a worker runs at least one loop at a time, not {concurrency}")
    now = database_now(conn)
    row = {
        "name": name,
        "labels": sorted(set(labels)),
        "concurrency": concurrency,
        "version": version,
        "started_at": now,
        "heartbeat_at": now,
    }
    upsert = insert(workers).values(row)
    conn.execute(upsert.on_conflict_do_update(index_elements=[workers.c.name], set_=row))
    return _worker(row)


def heartbeat(conn: Connection, name: str) -> bool:
    """Record that ``name`` is alive now; False when it is not registered (any more)."""
    require_postgresql(conn)
    beat = update(workers).where(workers.c.name == name).values(heartbeat_at=func.clock_timestamp())
    return conn.execute(beat).rowcount == 1


def deregister(conn: Connection, name: str) -> bool:
    """Remove ``name`` from the fleet (it drained); False when it was not registered."""
    require_postgresql(conn)
    return conn.execute(delete(workers).where(workers.c.name == name)).rowcount == 1


def list_workers(conn: Connection) -> tuple[datetime, list[FleetWorker]]:
    """Every registered worker by name, with the database's clock to judge them alive by."""
    require_postgresql(conn)
    rows = conn.execute(select(workers).order_by(workers.c.name)).mappings()
    return database_now(conn), [_worker(dict(row)) for row in rows]


def _worker(row: Mapping[str, Any]) -> FleetWorker:
    return FleetWorker(
        name=row["name"],
        labels=tuple(row["labels"]),
        concurrency=row["concurrency"],
        version=row["version"],
        started_at=row["started_at"],
        heartbeat_at=row["heartbeat_at"],
    )
