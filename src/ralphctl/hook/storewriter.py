"""Write Stop records into the store, in any order, any number of times: the result is the same.

Writers may overlap (a queue's writer, ``inline`` hooks, a batch stored again after a crash),
so no write reads the loop and puts it all back: the loop is created only if missing, an
iteration is stored only once and moves the loop forward only while it is behind, and a loop
gets its end only while it is still active (``Store.create_loop_once``,
``add_finished_iteration``, ``end_loop``). The stored loop ends in the tracker's state.
An iteration that brings the loop to 80 % of its iterations or runtime bound carries a
``budget_warning``, once per budget (the ones said are read back from the stored events);
without a runner the Stop hook knows no cost or tokens, so those budgets are not warned of.

Imports the store: run only in the history writer, never on the hook's decision path.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeGuard

from ralphctl.hook import spool
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.jsonio import loads
from ralphctl.hook.log import warn
from ralphctl.hook.record import SUMMARY_CHARS, StopRecord

if TYPE_CHECKING:
    from ralphctl.store.repository import Store


def write_guarded(record: StopRecord, db: str | None) -> None:
    """Record ``record`` in the store ``db`` now; a failure is a warning, never raised."""
    try:
        with _open(db) as store:
            write(store, record)
    except Exception as exc:  # history is best effort: a broken store must not break the loop
        warn(f"history not recorded ({type(exc).__name__}: {exc})", record.project)


def drain(project: str, writer_lock: int) -> None:
    """Store the project's queued records until none is left, then release ``writer_lock``
    (the descriptor from ``spool.claim_writer``). Each database is opened once."""
    spool.sweep(project, time.time())
    with ExitStack() as stores:
        opened: dict[str | None, Store] = {}
        while True:
            while files := spool.queued(project):
                for path in files:
                    _store_file(path, opened, stores, project)
            os.close(writer_lock)
            if not spool.queued(project):
                return
            again = spool.claim_writer(project)
            if again is None:
                return  # another writer took over
            writer_lock = again


def _store_file(
    path: str, opened: dict[str | None, Store], stores: ExitStack, project: str
) -> None:
    """Store one queued record and forget it; a record that can never be stored is dropped
    with a warning, one whose store failed too."""
    try:
        text = spool.read(path)
        if text is None:
            return
        document = loads(text)
        if not isinstance(document, dict) or not isinstance(document.get("db"), str | None):
            raise ValueError(f"not a queued record: {text[:80]!r}")
        record = StopRecord.from_json(document.get("record"))
    except (OSError, ValueError, TypeError, RecursionError) as exc:
        warn(f"history queue: dropping {path} ({exc})", project)
        spool.done(path)
        return
    db = document["db"]
    try:
        if db not in opened:
            opened[db] = stores.enter_context(_open(db))
        write(opened[db], record)
    except Exception as exc:
        warn(f"history not recorded ({type(exc).__name__}: {exc})", record.project)
    spool.done(path)


def _open(db: str | None) -> Store:
    """The store ``db`` names; None is the user's default database (never the writer's own
    ``RALPHCTL_DB``: the writer stores records queued by Stops of other environments)."""
    if "site" not in sys.modules:  # started with -S for speed: the store needs site-packages
        import site

        site.main()
    from ralphctl.store.repository import Store
    from ralphctl.store.url import default_path

    return Store.open(db or str(default_path()))


def write(store: Store, record: StopRecord) -> None:
    """Add ``record`` to its loop's history (creating the loop on its first record)."""
    _create_loop(store, record)
    ended = datetime.fromtimestamp(record.ended_at, UTC)
    if record.iteration is not None:
        _iteration(store, record, record.iteration, ended)
    if record.stop_reason is not None:
        _end(store, record, record.stop_reason, ended)


def _create_loop(store: Store, record: StopRecord) -> None:
    from ralphctl.domain.states import LoopStatus
    from ralphctl.store.records import LoopRecord

    started = datetime.fromtimestamp(record.loop_started_at, UTC)
    title = record.task.strip().partition("\n")[0][:60] or record.loop_id
    store.create_loop_once(
        LoopRecord(
            id=record.loop_id,
            name=f"hook: {title}",
            mode="hook",
            agent=record.agent,
            workdir=record.project,
            task=record.task,
            config=dict(record.config),
            status=LoopStatus.RUNNING,
            created_at=started,
            started_at=started,
            agent_session_id=record.session_id,
        )
    )


def _iteration(store: Store, record: StopRecord, n: int, ended: datetime) -> None:
    """Store iteration ``n``, which just ended, and move the loop forward to it."""
    from ralphctl.domain.events import EventType
    from ralphctl.store.records import IterationRecord

    began = record.iteration_started_at or record.loop_started_at
    duration_ms = max(0, round((record.ended_at - began) * 1000))
    done = IterationRecord(
        loop_id=record.loop_id,
        n=n,
        started_at=datetime.fromtimestamp(began, UTC),
        status="ok",
        completed_at=ended,
        duration_ms=duration_ms,
        completion_signal_found=record.completed,
        blocked_reason=record.blocked_reason,
        output_summary=record.summary[:SUMMARY_CHARS],
        agent_session_id=record.session_id,
    )
    advance: dict[str, object] = {"runtime_s": max(0.0, record.ended_at - record.loop_started_at)}
    if record.session_id:
        advance["agent_session_id"] = record.session_id
    completed = {
        "iteration": n,
        "status": "ok",
        "duration_ms": duration_ms,
        "completion_signal_found": record.completed,
        "blocked_reason": record.blocked_reason,
    }
    if record.messages:  # handed to the agent in this Stop's continue message
        completed["messages"] = list(record.messages)
    events: list[tuple[str, dict[str, object]]] = [(EventType.ITERATION_COMPLETED, completed)]
    if record.completed:
        events.append((EventType.COMPLETION_SIGNAL_DETECTED, {"iteration": n}))
    events += _budget_events(store, record, n)
    store.add_finished_iteration(done, advance, events)


def _budget_events(store: Store, record: StopRecord, n: int) -> list[tuple[str, dict[str, object]]]:
    """A ``budget_warning`` for each bound the loop is now 80 % through and was not warned of
    (its iterations and runtime: the tracker's cost and tokens are a runner's)."""
    from ralphctl.domain.budget_warnings import budget_warnings
    from ralphctl.domain.events import EventType
    from ralphctl.domain.stoprules import Budgets, Totals

    bound, runtime = record.config.get("max_iterations"), record.config.get("max_runtime_s")
    budgets = Budgets(
        max_iterations=int(bound) if _number(bound) else None,
        max_runtime_s=float(runtime) if _number(runtime) else None,
    )
    if budgets.max_iterations is None and budgets.max_runtime_s is None:
        return []
    said = store.events_of(record.loop_id, [str(EventType.BUDGET_WARNING)])
    warned = {str(event.data.get("budget")) for event in said}
    totals = Totals(iterations=n, runtime_s=max(0.0, record.ended_at - record.loop_started_at))
    found = budget_warnings(totals, budgets, warned)
    return [(str(EventType.BUDGET_WARNING), {"iteration": n, **data}) for data in found]


def _number(value: Scalar) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _end(store: Store, record: StopRecord, stop_reason: str, ended: datetime) -> None:
    """The loop's final status, from the ``StopReason`` that ended it."""
    from ralphctl.domain.events import EventType
    from ralphctl.domain.states import StopReason

    reason = StopReason(stop_reason)
    status = reason.status
    detail = record.stop_detail
    changed = {"status": str(status), "reason": str(reason), "detail": detail}
    # A loop's end event is named after the status it ends in (completed, stopped, …).
    events = [(EventType.STATE_CHANGED, changed), (EventType(str(status)), {"reason": str(reason)})]
    final = {"status": status, "stop_reason": reason, "stop_detail": detail, "ended_at": ended}
    store.end_loop(record.loop_id, final, events)
