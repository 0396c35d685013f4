"""Where a fleet loop's work lives: its repository, its base branch, and the labels a worker
needs to run it. One row per fleet loop (``fleet_loops``), beside the loop's own; a loop
without one is not a fleet loop."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, insert, select

from ralphctl.fleet.backbone import require_postgresql
from ralphctl.store.records import LoopRecord, loop_values
from ralphctl.store.schema import fleet_loops, loops


@dataclass(frozen=True, slots=True)
class FleetLoop:
    """A fleet loop works on ``ralph/<loop-id>`` of ``repo_url``, started from ``base_branch``;
    only a worker with every one of ``labels`` runs it."""

    loop_id: str
    repo_url: str
    base_branch: str
    labels: tuple[str, ...] = ()


def store_fleet_loop(conn: Connection, loop: LoopRecord, origin: FleetLoop) -> None:
    """Create ``loop`` (pending) and its fleet row, in the caller's transaction."""
    require_postgresql(conn)
    conn.execute(insert(loops).values(loop_values(loop)))
    conn.execute(
        insert(fleet_loops).values(
            loop_id=loop.id,
            repo_url=origin.repo_url,
            base_branch=origin.base_branch,
            labels=sorted(set(origin.labels)),
        )
    )


def fleet_loop(conn: Connection, loop_id: str) -> FleetLoop | None:
    """The fleet row of loop ``loop_id``; None when it is not a fleet loop."""
    columns = (fleet_loops.c.repo_url, fleet_loops.c.base_branch, fleet_loops.c.labels)
    row = conn.execute(select(*columns).where(fleet_loops.c.loop_id == loop_id)).one_or_none()
    if row is None:
        return None
    return FleetLoop(loop_id, row.repo_url, row.base_branch, tuple(row.labels))


def normal_labels(labels: Sequence[str]) -> tuple[str, ...]:
    """Labels as stored and compared: stripped, without empties or repeats, sorted;
    ValueError for a label with a comma (queue names join labels with commas)."""
    found = {label.strip() for label in labels} - {""}
    if bad := sorted(label for label in found if "," in label):
        raise ValueError(f"label {bad[0]!r}: a label cannot hold a comma")
    return tuple(sorted(found))
