"""Leases in PostgreSQL: the rules of ``leaserules`` applied to one loop's row, locked.

Every function runs in the caller's transaction (``engine.begin()``), on the database
server's clock, so that workers on machines with skewed clocks agree on expiry.

- ``acquire`` creates the loop's row if it was never held, then locks it ``FOR UPDATE``: of
  two workers acquiring at once, the second waits for the first's commit and then sees the
  lease it made, so exactly one wins.
- ``fenced`` locks the row ``FOR SHARE``: called first in a transaction that writes a loop's
  records, it refuses a holder whose generation is no longer current, and it makes a takeover
  (``FOR UPDATE``) wait until that transaction ends, so no write lands after a takeover.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Connection, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import IntegrityError

from ralphctl.fleet.backbone import database_now, require_postgresql
from ralphctl.fleet.errors import FleetError
from ralphctl.fleet.leaserules import Lease, acquired, holds, released, renewed
from ralphctl.store.schema import loop_leases

_COLUMNS = (
    loop_leases.c.loop_id,
    loop_leases.c.worker,
    loop_leases.c.generation,
    loop_leases.c.acquired_at,
    loop_leases.c.expires_at,
)


def acquire(conn: Connection, loop_id: str, worker: str, ttl: timedelta) -> Lease | None:
    """Hold loop ``loop_id`` for ``worker`` for ``ttl`` in a new generation; None when another
    worker holds it and its lease has not expired."""
    require_postgresql(conn)
    try:
        conn.execute(
            insert(loop_leases)
            .values(loop_id=loop_id, generation=0)
            .on_conflict_do_nothing(index_elements=[loop_leases.c.loop_id])
        )
    except IntegrityError as exc:
        raise FleetError(f"cannot lease loop {loop_id!r}: there is no such loop") from exc
    current = _locked(conn, loop_id, share=False)
    lease = acquired(current, loop_id, worker, database_now(conn), ttl)
    if lease is not None:
        _write(conn, lease)
    return lease


def renew(conn: Connection, lease: Lease, ttl: timedelta) -> Lease | None:
    """``lease`` extended by ``ttl`` from now; None when its holder lost it (fenced)."""
    require_postgresql(conn)
    if lease.worker is None:
        return None
    current = _locked(conn, lease.loop_id, share=False)
    extended = renewed(current, lease.worker, lease.generation, database_now(conn), ttl)
    if extended is not None:
        _write(conn, extended)
    return extended


def release(conn: Connection, lease: Lease) -> bool:
    """Give the loop up for any worker to acquire at once; False when it was lost already."""
    require_postgresql(conn)
    if lease.worker is None:
        return False
    current = _locked(conn, lease.loop_id, share=False)
    freed = released(current, lease.worker, lease.generation)
    if freed is not None:
        _write(conn, freed)
    return freed is not None


def fenced(conn: Connection, loop_id: str, generation: int) -> bool:
    """Whether a write by the holder of ``generation`` must be refused. Call it first in the
    transaction that writes: the row stays share-locked until that transaction ends."""
    require_postgresql(conn)
    return not holds(_locked(conn, loop_id, share=True), generation)


def current_lease(conn: Connection, loop_id: str) -> Lease | None:
    """The loop's lease as it is (no lock); None when it was never held."""
    require_postgresql(conn)
    row = conn.execute(select(*_COLUMNS).where(loop_leases.c.loop_id == loop_id)).one_or_none()
    return None if row is None else Lease(*row)


def _locked(conn: Connection, loop_id: str, *, share: bool) -> Lease | None:
    query = select(*_COLUMNS).where(loop_leases.c.loop_id == loop_id)
    row = conn.execute(query.with_for_update(read=share)).one_or_none()
    return None if row is None else Lease(*row)


def _write(conn: Connection, lease: Lease) -> None:
    conn.execute(
        update(loop_leases)
        .where(loop_leases.c.loop_id == lease.loop_id)
        .values(
            worker=lease.worker,
            generation=lease.generation,
            acquired_at=lease.acquired_at,
            expires_at=lease.expires_at,
        )
    )
