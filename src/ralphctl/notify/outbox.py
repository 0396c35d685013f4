"""The notification outbox: rows in the database, enqueued from the events, claimed by lease.

Design (why a follower, not an insert beside each event): every process that stores events
(runners, the manager, the Stop hook's recorder, ``ralphctl stop``) would otherwise need the
notification settings of every loop; instead a follower reads ``events`` after its persisted
cursor (``notification_cursor``) and enqueues a row per (event, channel). Events are committed
in seq order (``store/repository``), so a cursor never skips one committed late.

- **Never lost**: the cursor moves only in the transaction that inserts the rows of the events
  it moves past. A crash before that commit leaves both untouched; the next follower redoes it.
- **Never duplicated**: ``(event_seq, channel)`` is unique and rows are inserted with ``ON
  CONFLICT DO NOTHING``; the cursor only moves forward. Several followers (several processes
  on one database) may read the same events: each row is still made once.
- **Claimed by lease**: a deliverer claims due rows with one ``UPDATE … WHERE status =
  'pending' AND (claimed_until IS NULL OR claimed_until < now)``, setting its own claim token
  and a lease; PostgreSQL re-checks that condition after a concurrent update, SQLite runs one
  writer at a time, so a row is claimed by one deliverer. Outcomes are written only under the
  same token. A deliverer that dies mid-delivery leaves the lease to expire: the row is tried
  again (delivery is at least once; ``X-Ralphctl-Delivery`` carries the row id to dedupe).
- The cursor starts where migration 0005 put it: at the first event of a new database, after
  the history of an upgraded one (not replayed). An event deleted by retention before a
  follower reached it is not notified.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Column, Connection, Insert, RowMapping, Table, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from ralphctl.store.records import EventRecord
from ralphctl.store.repository import Store
from ralphctl.store.schema import events, loops, notification_cursor, notifications

PENDING, DELIVERED, FAILED, SKIPPED = "pending", "delivered", "failed", "skipped"
STATUSES = (PENDING, DELIVERED, FAILED, SKIPPED)
CURSOR = "events"
BATCH = 500


@dataclass(frozen=True, slots=True)
class LoopInfo:
    """What routing needs of an event's loop."""

    id: str
    name: str
    workdir: str
    config: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Notification:
    id: int
    loop_id: str
    event_seq: int
    event: str
    channel: str
    payload: dict[str, Any]
    status: str
    attempts: int
    next_attempt_at: datetime
    last_error: str | None
    outcomes: list[dict[str, Any]]
    created_at: datetime
    delivered_at: datetime | None


#: (event, its loop) -> [(notification name, channel key)]: what to enqueue for it.
Route = Callable[[EventRecord, LoopInfo], Sequence[tuple[str, str]]]


def follow(store: Store, route: Route, *, batch: int = BATCH) -> int:
    """Enqueue the notifications of the events after the cursor (at most ``batch`` events);
    the number of rows made. Routing happens between the read and the write transaction."""
    with store.transaction("read the notification cursor") as conn:
        cursor = _cursor(conn)
        query = select(events).where(events.c.seq > cursor).order_by(events.c.seq).limit(batch)
        found = [EventRecord(**row._mapping) for row in conn.execute(query)]
        infos = _loops(conn, {event.loop_id for event in found})
    if not found:
        return 0
    rows = []
    for event in found:
        info = infos.get(event.loop_id)
        if info is not None:  # else the loop was deleted since
            rows += [_row(event, info, name, channel) for name, channel in route(event, info)]
    made = 0
    keys = [notifications.c.event_seq, notifications.c.channel]
    with store.transaction("enqueue notifications") as conn:
        for row in rows:
            statement = _insert_new(conn, notifications, row, keys).returning(notifications.c.id)
            made += len(conn.execute(statement).all())
        last = found[-1].seq
        moved = (notification_cursor.c.name == CURSOR) & (notification_cursor.c.seq < last)
        conn.execute(update(notification_cursor).where(moved).values(seq=last))
    return made


def claim(
    store: Store, *, limit: int, lease_s: float, now: datetime | None = None
) -> tuple[str, list[tuple[Notification, str]]]:
    """Claim up to ``limit`` due rows for ``lease_s``; the claim token and the rows, each with
    its loop's work dir (where its channels are configured)."""
    now = now or _now()
    token = uuid.uuid4().hex
    free = (notifications.c.claimed_until.is_(None)) | (notifications.c.claimed_until < now)
    due = (notifications.c.status == PENDING) & (notifications.c.next_attempt_at <= now) & free
    with store.transaction("claim notifications") as conn:
        ids = select(notifications.c.id).where(due).order_by(notifications.c.id).limit(limit)
        claimed = conn.execute(
            update(notifications)
            .where(notifications.c.id.in_(ids.scalar_subquery()), due)
            .values(claim=token, claimed_until=now + timedelta(seconds=lease_s))
            .returning(*notifications.c)
        ).all()
        rows = sorted((_notification(row._mapping) for row in claimed), key=lambda n: n.id)
        workdirs = {
            info.id: info.workdir for info in _loops(conn, {n.loop_id for n in rows}).values()
        }
    return token, [(row, workdirs.get(row.loop_id, "")) for row in rows]


def record(
    store: Store,
    notification: Notification,
    token: str,
    outcome: Mapping[str, Any],
    *,
    status: str,
    retry_at: datetime | None = None,
) -> bool:
    """Record one attempt's ``outcome`` (``ok``, ``detail``…) and the row's new ``status``
    (``retry_at`` for one still pending); False when the claim was lost meanwhile."""
    now = _now()
    values: dict[str, Any] = {
        "status": status,
        "attempts": notifications.c.attempts + 1,
        "outcomes": [*notification.outcomes, {"at": now.isoformat(), **outcome}],
        "last_error": None if outcome.get("ok") else outcome.get("detail"),
        "claim": None,
        "claimed_until": None,
    }
    if status == DELIVERED:
        values["delivered_at"] = now
    if retry_at is not None:
        values["next_attempt_at"] = retry_at
    mine = (notifications.c.id == notification.id) & (notifications.c.claim == token)
    with store.transaction("record a notification's delivery") as conn:
        return bool(conn.execute(update(notifications).where(mine).values(values)).rowcount)


def recent(
    store: Store, *, limit: int = 50, loop_id: str | None = None, status: str | None = None
) -> list[Notification]:
    """The newest notifications first."""
    query = select(notifications).order_by(notifications.c.id.desc()).limit(limit)
    if loop_id is not None:
        query = query.where(notifications.c.loop_id == loop_id)
    if status is not None:
        query = query.where(notifications.c.status == status)
    with store.transaction("read notifications") as conn:
        return [_notification(row._mapping) for row in conn.execute(query)]


def _cursor(conn: Connection) -> int:
    """The cursor's seq (made by the migration; made again at the newest event if deleted)."""
    where = notification_cursor.c.name == CURSOR
    seq = conn.execute(select(notification_cursor.c.seq).where(where)).scalar_one_or_none()
    if seq is not None:
        return int(seq)
    newest = conn.execute(select(func.coalesce(func.max(events.c.seq), 0))).scalar_one()
    values = {"name": CURSOR, "seq": newest}
    conn.execute(_insert_new(conn, notification_cursor, values, [notification_cursor.c.name]))
    return int(conn.execute(select(notification_cursor.c.seq).where(where)).scalar_one())


def _insert_new(
    conn: Connection, table: Table, values: Mapping[str, Any], keys: Sequence[Column[Any]]
) -> Insert:
    """``INSERT … ON CONFLICT (keys) DO NOTHING`` in the connection's dialect."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).values(values).on_conflict_do_nothing(index_elements=keys)
    return sqlite.insert(table).values(values).on_conflict_do_nothing(index_elements=keys)


def _loops(conn: Connection, ids: set[str]) -> dict[str, LoopInfo]:
    if not ids:
        return {}
    columns = (loops.c.id, loops.c.name, loops.c.workdir, loops.c.config)
    rows = conn.execute(select(*columns).where(loops.c.id.in_(sorted(ids))))
    return {row.id: LoopInfo(row.id, row.name, row.workdir, row.config or {}) for row in rows}


def _row(event: EventRecord, loop: LoopInfo, name: str, channel: str) -> dict[str, Any]:
    now = _now()
    payload = {
        "event": name,
        "event_type": event.event_type,
        "seq": event.seq,
        "loop": {"id": loop.id, "name": loop.name},
        "data": event.data,
        "timestamp": event.timestamp.isoformat(),
    }
    return {
        "loop_id": loop.id,
        "event_seq": event.seq,
        "event": name,
        "channel": channel,
        "payload": payload,
        "status": PENDING,
        "attempts": 0,
        "next_attempt_at": now,
        "outcomes": [],
        "created_at": now,
    }


def _notification(row: RowMapping) -> Notification:
    values = {key: row[key] for key in Notification.__dataclass_fields__}
    values["outcomes"] = list(values["outcomes"] or [])
    return Notification(**values)


def _now() -> datetime:
    return datetime.now(UTC)
