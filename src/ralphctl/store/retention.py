"""Bounded event history: keep the newest ``keep`` events of each loop, delete the older ones.

Loops, iterations, errors and checkpoints are never deleted; only the event log is trimmed.
"""

from __future__ import annotations

from sqlalchemy import delete, func, select

from ralphctl.store.repository import Store
from ralphctl.store.schema import events


def prune_events(store: Store, keep: int) -> int:
    """Delete all but the newest ``keep`` events of every loop; returns how many went."""
    if keep < 1:
        raise ValueError(f"keep must be >= 1, not {keep}")
    over = select(events.c.loop_id).group_by(events.c.loop_id).having(func.count() > keep)
    deleted = 0
    with store.transaction("trim the event history") as conn:
        for loop_id in conn.execute(over).scalars().all():
            newest = (
                select(events.c.seq)
                .where(events.c.loop_id == loop_id)
                .order_by(events.c.seq.desc())
                .offset(keep - 1)
                .limit(1)
                .scalar_subquery()
            )
            gone = conn.execute(
                delete(events).where(events.c.loop_id == loop_id, events.c.seq < newest)
            )
            deleted += gone.rowcount
    return deleted
