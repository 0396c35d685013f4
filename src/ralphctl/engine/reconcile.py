"""Start-up reconciliation: what a manager finds that no runner runs, and what it does with it.

Loops left running, rate limited or pending with no live runner (the last manager crashed or
shut down) get the agents of their unfinished iterations stopped (``engine/leftovers``), those
iterations marked interrupted and their stale sentinels removed; then they are resumed in
order (those that were running first, oldest first), or, with ``on_start = "leave_paused"``,
paused (pending loops stay pending until resumed). A hook-mode loop whose runner had begun
its session cannot be entered again: it is stopped (``interrupted``) and its tracker
deactivated. A loop armed through the plugin in a session ralphctl did not launch has no
runner to lose: it is left as it is (its Stop hook drives it), and so is a fleet loop (the
fleet's workers run it, ``fleet.placement``). The sockets of hook-mode runners that died are
removed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ralphctl.domain.events import EventType
from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.engine.control import clear_sentinels, plugin_loop, settle
from ralphctl.engine.hookmode.sockets import remove_stale
from ralphctl.engine.leftovers import Leftovers, interrupt_leftovers
from ralphctl.fleet.placement import placements
from ralphctl.store.records import EventRecord, LoopRecord
from ralphctl.store.repository import Store

ORPHAN_STATUSES = (LoopStatus.RUNNING, LoopStatus.RATE_LIMITED, LoopStatus.PENDING)
LEFT_PAUSED = "left paused at start-up ([loops] on_start = leave_paused)"
SESSION_LOST = "its runner died, and a hook-mode session cannot be entered again"


@dataclass
class Reconciled:
    to_resume: list[LoopRecord] = field(default_factory=list)
    events: list[EventRecord] = field(default_factory=list)
    removed_sockets: list[Path] = field(default_factory=list)


def resume_order(loop: LoopRecord) -> tuple[bool, float]:
    """Loops that were running before pending ones; oldest first within each."""
    return loop.status is LoopStatus.PENDING, loop.created_at.timestamp()


def reconcile(store: Store, orphaned: Callable[[LoopRecord], bool], resume: bool) -> Reconciled:
    """Tidy every orphaned loop and stale socket; return the loops to resume and the events
    recorded."""
    found = Reconciled(removed_sockets=remove_stale())
    candidates = store.list_loops(ORPHAN_STATUSES)
    fleet = placements(store, [loop.id for loop in candidates])
    loops = sorted(
        (
            loop
            for loop in candidates
            if loop.id not in fleet and not plugin_loop(loop) and orphaned(loop)
        ),
        key=resume_order,
    )
    leftovers = interrupt_leftovers(store, loops)
    for loop in loops:
        tidied = _tidy(store, loop, leftovers[loop.id], found.events)
        began = tidied.status is not LoopStatus.PENDING
        if began and tidied.mode == "hook":
            _, events = settle(
                store, tidied, LoopStatus.STOPPED, SESSION_LOST, why=StopReason.INTERRUPTED
            )
            found.events.extend(events)
        elif resume:
            found.to_resume.append(tidied)
        elif began:
            _, events = settle(store, tidied, LoopStatus.PAUSED, LEFT_PAUSED)
            found.events.extend(events)
    return found


def _tidy(
    store: Store, loop: LoopRecord, leftovers: Leftovers, events: list[EventRecord]
) -> LoopRecord:
    workdir = Path(loop.workdir)
    cleared = [str(s) for s in clear_sentinels(workdir)] if workdir.is_dir() else []
    if leftovers.changed:
        loop = store.save_loop(leftovers.applied_to(loop))
    if leftovers.changed or cleared:
        parts = [leftovers.message()] if leftovers.changed else []
        if cleared:
            parts.append(f"stale sentinel(s) removed: {', '.join(cleared)}")
        data = {
            "message": "; ".join(parts),
            "interrupted_iterations": leftovers.interrupted,
            "agents": [agent.data() for agent in leftovers.agents],
            "cleared_sentinels": cleared,
        }
        events.append(store.append_event(loop.id, str(EventType.WARNING), data))
    return loop
