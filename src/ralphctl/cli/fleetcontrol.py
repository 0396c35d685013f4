"""`ralphctl loops resume --db postgresql://… ID` of a fleet loop: queued again for a worker,
never run here (docs/fleet.md)."""

from __future__ import annotations

from ralphctl.cli.common import UsageError, open_store
from ralphctl.domain.states import IllegalTransition
from ralphctl.engine.control import UnsupportedControl
from ralphctl.store.records import LoopRecord


def resume_in_fleet(loop_id: str, db: str | None) -> LoopRecord | None:
    """The fleet loop ``loop_id``, queued again; None when it is not a fleet loop (then it
    resumes here, in the foreground)."""
    store = open_store(db)
    if not store.url.startswith("postgresql"):  # only there can a loop be a fleet loop
        return None
    # Imported here: SQLAlchemy, and the fleet extra only a fleet loop needs.
    from ralphctl.fleet.placement import is_fleet_loop

    loop = store.get_loop(loop_id)
    if not is_fleet_loop(store, loop.id):
        return None
    from ralphctl.fleet.control import resume_fleet_loop

    try:
        return resume_fleet_loop(store, loop.id)
    except (IllegalTransition, UnsupportedControl) as exc:
        raise UsageError(str(exc)) from None
