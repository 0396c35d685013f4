"""Where fleet loops are: their repository, base branch and labels, the worker that holds
each now, and why a pending one waits (no live worker has its labels). Plain queries on the
store's own tables (``fleet_loops``, ``loop_leases``, ``workers``): a server or CLI reads
them without the ``fleet`` extra. Fleet loops live on PostgreSQL only, so on
SQLite nothing is asked and nothing is a fleet loop."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select

from ralphctl.domain.states import LoopStatus
from ralphctl.store.repository import Store
from ralphctl.store.schema import fleet_loops, loop_leases, loops, workers

#: A worker silent for this long is not alive (its beat is every few seconds).
STALE_AFTER = timedelta(seconds=20)


@dataclass(frozen=True, slots=True)
class Placement:
    """A fleet loop's repository and base branch, the labels it needs, and the worker that
    holds its lease now (None: no worker holds it: pending, between workers, or ended);
    ``waiting_for``: why a pending one waits, when no live worker can run it."""

    loop_id: str
    repo_url: str
    base_branch: str
    labels: tuple[str, ...]
    worker: str | None
    waiting_for: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo_url,
            "branch": self.base_branch,
            "loop_branch": f"ralph/{self.loop_id}",
            "labels": list(self.labels),
            "worker": self.worker,
            "waiting_for": self.waiting_for,
        }


def placements(store: Store, loop_ids: Collection[str]) -> dict[str, Placement]:
    """The fleet loops among ``loop_ids``, by id; the others are not fleet loops."""
    if not loop_ids or not _on_postgresql(store):
        return {}
    now = func.clock_timestamp()  # the clock of leases: the database's
    held = loop_leases.c.worker.is_not(None) & (loop_leases.c.expires_at > now)
    query = select(
        fleet_loops.c.loop_id,
        fleet_loops.c.repo_url,
        fleet_loops.c.base_branch,
        fleet_loops.c.labels,
        loop_leases.c.worker,
        held.label("held"),
        loops.c.status,
    )
    query = query.join(loops, loops.c.id == fleet_loops.c.loop_id)
    query = query.outerjoin(loop_leases, loop_leases.c.loop_id == fleet_loops.c.loop_id)
    query = query.where(fleet_loops.c.loop_id.in_(list(loop_ids)))
    alive = select(workers.c.labels).where(
        workers.c.heartbeat_at > now - STALE_AFTER  # the registry's rule, on the same clock
    )
    with store.transaction("read where fleet loops run") as conn:
        rows = conn.execute(query).all()
        served = [set(labels) for (labels,) in conn.execute(alive)]
    return {
        row.loop_id: Placement(
            row.loop_id,
            row.repo_url,
            row.base_branch,
            tuple(row.labels),
            row.worker if row.held else None,
            _waiting(row.labels, served) if row.status == str(LoopStatus.PENDING) else None,
        )
        for row in rows
    }


def _waiting(labels: Sequence[str], served: Sequence[set[str]]) -> str | None:
    """Why a pending loop needing ``labels`` waits; None when a live worker serves them."""
    if any(set(labels) <= worker_labels for worker_labels in served):
        return None
    return waiting_for(labels)


def waiting_for(labels: Sequence[str]) -> str:
    """``waiting for a worker with labels gpu, linux``."""
    if not labels:
        return "waiting for a worker"
    noun = "label" if len(labels) == 1 else "labels"
    return f"waiting for a worker with {noun} {', '.join(labels)}"


def is_fleet_loop(store: Store, loop_id: str) -> bool:
    """Whether loop ``loop_id`` (a full id) is a fleet loop."""
    if not _on_postgresql(store):
        return False
    with store.transaction("read whether a loop is a fleet loop") as conn:
        found = conn.execute(select(fleet_loops.c.loop_id).where(fleet_loops.c.loop_id == loop_id))
        return found.first() is not None


def _on_postgresql(store: Store) -> bool:
    return store.url.startswith("postgresql")
