"""Best-effort history: each Stop becomes an iteration of a ``mode="hook"`` loop in the store.

The decision is printed and flushed first; then a detached child (new session, stdio on
/dev/null, never waited for: it outlives the hook and init reaps it) opens the store and
writes. Claude Code waits for the hook's process and pipes, never for the child, so the
store can never delay a decision.
``RALPHCTL_HOOK_STORE`` = ``detached`` (default) | ``inline`` (write before exiting) | ``off``.
"""

from __future__ import annotations

import os
import sys

from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.log import warn

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime

    from ralphctl.store.records import LoopRecord
    from ralphctl.store.repository import Store

MODE_ENV = "RALPHCTL_HOOK_STORE"
SUMMARY_CHARS = 200


class StopRecord:
    """What one Stop (or a cancel, with ``iteration`` None) adds to a loop's history.

    A plain class, not a dataclass: it is built on the hook's hot path.
    """

    __slots__ = (
        "agent",
        "blocked_reason",
        "completed",
        "config",
        "ended_at",
        "iteration",
        "iteration_started_at",
        "loop_id",
        "loop_started_at",
        "project",
        "session_id",
        "stop_detail",
        "stop_reason",
        "summary",
        "task",
    )

    def __init__(
        self,
        *,
        loop_id: str,
        project: str,
        agent: str,
        session_id: str | None,
        task: str,
        loop_started_at: float,
        ended_at: float,
        iteration: int | None = None,
        iteration_started_at: float | None = None,
        summary: str = "",
        completed: bool = False,
        blocked_reason: str | None = None,
        stop_reason: str | None = None,
        stop_detail: str = "",
        config: dict[str, Scalar] | None = None,
    ) -> None:
        self.loop_id = loop_id
        self.project = project
        self.agent = agent
        self.session_id = session_id
        self.task = task
        self.loop_started_at = loop_started_at
        self.ended_at = ended_at
        self.iteration = iteration
        self.iteration_started_at = iteration_started_at
        self.summary = summary
        self.completed = completed
        self.blocked_reason = blocked_reason
        self.stop_reason = stop_reason
        self.stop_detail = stop_detail
        self.config = config or {}


def dispatch(record: StopRecord, mode: str | None) -> None:
    """Write ``record`` as ``mode`` says; never raises."""
    if mode == "off":
        return
    if mode == "inline":
        _guarded(record)
        return
    try:
        _spawn(record)
    except OSError as exc:
        warn(f"cannot start the history writer: {exc}", record.project)


def _spawn(record: StopRecord) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork():
        return
    try:
        _detach_stdio()  # first: Claude Code waits until every copy of the hook's pipes closes
        os.setsid()
        _guarded(record)
    finally:
        os._exit(0)


def _detach_stdio() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _guarded(record: StopRecord) -> None:
    try:
        write(record)
    except Exception as exc:  # history is best effort: a broken store must not break the loop
        warn(f"history not recorded ({type(exc).__name__}: {exc})", record.project)


def write(record: StopRecord, db: str | None = None) -> None:
    """Record ``record`` in the store ``db`` (default: ``RALPHCTL_DB`` or the user's file)."""
    if "site" not in sys.modules:  # started with -S for speed: the store needs site-packages
        import site

        site.main()
    from ralphctl.store.repository import Store

    with Store.open(db) as store:
        _write(store, record)


def _write(store: Store, record: StopRecord) -> None:
    from datetime import UTC, datetime

    ended = datetime.fromtimestamp(record.ended_at, UTC)
    loop = _loop(store, record)
    if record.iteration is not None:
        loop = _iteration(store, loop, record, record.iteration, ended)
    if record.stop_reason is not None:
        _end(store, loop, record.stop_reason, record.stop_detail, ended)


def _iteration(
    store: Store, loop: LoopRecord, record: StopRecord, n: int, ended: datetime
) -> LoopRecord:
    """Record iteration ``n``, which just ended; returns the loop with its new totals."""
    from dataclasses import replace
    from datetime import UTC, datetime

    from ralphctl.domain.events import EventType
    from ralphctl.store.records import IterationRecord

    began = record.iteration_started_at or record.loop_started_at
    begun = IterationRecord(loop_id=loop.id, n=n, started_at=datetime.fromtimestamp(began, UTC))
    store.begin_iteration(begun)
    done = replace(
        begun,
        status="ok",
        completed_at=ended,
        duration_ms=max(0, round((record.ended_at - began) * 1000)),
        completion_signal_found=record.completed,
        blocked_reason=record.blocked_reason,
        output_summary=record.summary[:SUMMARY_CHARS],
        agent_session_id=record.session_id,
    )
    loop = replace(
        loop,
        iteration=max(loop.iteration, n),
        runtime_s=(ended - (loop.started_at or ended)).total_seconds(),
        agent_session_id=record.session_id or loop.agent_session_id,
    )
    completed = {
        "iteration": n,
        "status": "ok",
        "duration_ms": done.duration_ms,
        "completion_signal_found": record.completed,
        "blocked_reason": record.blocked_reason,
    }
    events: list[tuple[str, dict[str, object]]] = [(EventType.ITERATION_COMPLETED, completed)]
    if record.completed:
        events.append((EventType.COMPLETION_SIGNAL_DETECTED, {"iteration": n}))
    store.complete_iteration(done, loop, events)
    return loop


def _end(store: Store, loop: LoopRecord, stop_reason: str, detail: str, ended: datetime) -> None:
    """The loop's final status, from the ``StopReason`` that ended it."""
    from dataclasses import replace

    from ralphctl.domain.events import EventType
    from ralphctl.domain.states import StopReason

    reason = StopReason(stop_reason)
    status = reason.status
    store.save_loop(
        replace(loop, status=status, stop_reason=reason, stop_detail=detail, ended_at=ended)
    )
    changed = {"status": str(status), "reason": str(reason), "detail": detail}
    # A loop's end event is named after the status it ends in (completed, stopped, …).
    end_event = EventType(str(status))
    store.append_events(
        loop.id, [(EventType.STATE_CHANGED, changed), (end_event, {"reason": str(reason)})]
    )


def _loop(store: Store, record: StopRecord) -> LoopRecord:
    """The loop of ``record.loop_id``, created on its first record."""
    from datetime import UTC, datetime

    from ralphctl.domain.states import LoopStatus
    from ralphctl.store.errors import LoopNotFound, StoreError
    from ralphctl.store.records import LoopRecord

    try:
        return store.get_loop(record.loop_id)
    except LoopNotFound:
        pass
    started = datetime.fromtimestamp(record.loop_started_at, UTC)
    title = record.task.strip().partition("\n")[0][:60] or record.loop_id
    new = LoopRecord(
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
    try:
        return store.create_loop(new)
    except StoreError:  # a concurrent writer created it first
        return store.get_loop(record.loop_id)
