"""The fleet at a glance (``ralphctl workers ls``): each worker, alive or not, its labels,
and the loops it holds now (unexpired leases) out of its slots; and which pending loops no
live worker can run (``waiting_loops``), said in ``loops ls``/``show`` too."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, select

from ralphctl.domain.states import LoopStatus
from ralphctl.fleet.backbone import require_postgresql
from ralphctl.fleet.placement import STALE_AFTER, waiting_for
from ralphctl.fleet.registry import list_workers
from ralphctl.store.database import open_engine
from ralphctl.store.schema import fleet_loops, loop_leases, loops
from ralphctl.store.url import resolve_url


@dataclass(frozen=True, slots=True)
class WorkerView:
    name: str
    alive: bool
    labels: tuple[str, ...]
    concurrency: int
    loops: tuple[str, ...]
    version: str

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "alive": self.alive,
            "labels": list(self.labels),
            "slots_used": len(self.loops),
            "slots": self.concurrency,
            "loops": list(self.loops),
            "version": self.version,
        }


def fleet_overview(conn: Connection) -> list[WorkerView]:
    """Every registered worker by name, judged on the database's clock."""
    now, found = list_workers(conn)
    held = conn.execute(
        select(loop_leases.c.worker, loop_leases.c.loop_id)
        .where(loop_leases.c.worker.is_not(None), loop_leases.c.expires_at > now)
        .order_by(loop_leases.c.loop_id)
    ).all()
    loops: dict[str, list[str]] = {}
    for worker, loop_id in held:
        loops.setdefault(worker, []).append(loop_id)
    return [
        WorkerView(
            worker.name,
            worker.is_alive(now, STALE_AFTER),
            worker.labels,
            worker.concurrency,
            tuple(loops.get(worker.name, ())),
            worker.version,
        )
        for worker in found
    ]


def waiting_loops(conn: Connection) -> dict[str, str]:
    """Each pending fleet loop that no live worker can run, by id: ``waiting for a worker
    with label gpu`` (``a worker`` when it requires none and no worker is alive)."""
    require_postgresql(conn)
    now, found = list_workers(conn)
    served = [set(w.labels) for w in found if w.is_alive(now, STALE_AFTER)]
    pending = conn.execute(
        select(fleet_loops.c.loop_id, fleet_loops.c.labels)
        .join(loops, loops.c.id == fleet_loops.c.loop_id)
        .where(loops.c.status == str(LoopStatus.PENDING))
    ).all()
    return {
        loop_id: waiting_for(labels)
        for loop_id, labels in pending
        if not any(set(labels) <= labels_of_worker for labels_of_worker in served)
    }


def waiting_in(url: str | None) -> dict[str, str]:
    """``waiting_loops`` of the PostgreSQL database at ``url``."""
    engine = open_engine(resolve_url(url))
    try:
        with engine.begin() as conn:
            return waiting_loops(conn)
    finally:
        engine.dispose()
