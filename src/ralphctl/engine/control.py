"""Controlling a loop that this process does not run: sentinel files, or the database itself.

A loop whose runner lives in another process (``ralphctl run``, another manager) is asked
through its sentinel file, read between iterations. A loop that no runner runs (paused,
queued, or left behind by a runner that died) is changed in the database directly.
"""

from __future__ import annotations

import os
import socket
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ralphctl.agents.process import pid_exists
from ralphctl.domain.conditions import ExternalSignal
from ralphctl.domain.events import EventType
from ralphctl.domain.states import (
    LoopStatus,
    Runner,
    StopReason,
    transition,
    why_not_resumable,
)
from ralphctl.engine.leftovers import interrupt_leftovers
from ralphctl.engine.sentinels import sentinel_path
from ralphctl.engine.statefile import ralph_dir
from ralphctl.store.records import EventRecord, LoopRecord

if TYPE_CHECKING:  # the store's import is heavy; `ralphctl run` imports this module at start
    from ralphctl.store.repository import Store

_END_EVENT = {
    LoopStatus.PAUSED: EventType.PAUSED,
    LoopStatus.STOPPED: EventType.STOPPED,
    LoopStatus.FAILED: EventType.FAILED,
}
_TARGET = {ExternalSignal.PAUSE: LoopStatus.PAUSED, ExternalSignal.STOP: LoopStatus.STOPPED}


class UnsupportedControl(ValueError):
    """A request the loop's mode cannot honour (resuming a hook-mode loop whose session ended
    without a pause)."""


def check_resumable(loop: LoopRecord) -> None:
    """UnsupportedControl when the loop cannot be resumed (``domain.states.why_not_resumable``:
    completed, running, or a hook-mode session that cannot be entered again)."""
    runner = runner_of(loop)
    why = why_not_resumable(loop.status, loop.mode, runner)
    if why is None:
        return
    if runner is Runner.ALIVE and loop.status in (LoopStatus.RUNNING, LoopStatus.RATE_LIMITED):
        why += f" in process {loop.runner_pid} on {loop.runner_host}"
    raise UnsupportedControl(f"loop {loop.id}: {why}")


def runner_of(loop: LoopRecord) -> Runner:
    """Whether a runner drives the loop, did and died, or never did (a plugin loop)."""
    if plugin_loop(loop):
        return Runner.NONE
    return Runner.ALIVE if runner_alive(loop) else Runner.GONE


def plugin_loop(loop: LoopRecord) -> bool:
    """A same-session loop armed through the plugin (``/ralph-loop``) in a Claude Code session
    that ralphctl did not launch: its Stop hook drives it and records it, no runner ever ran
    it (a runner records its host when it begins), so it is never anyone's orphan."""
    return (
        loop.mode == "hook"
        and loop.runner_pid is None
        and loop.runner_host is None
        and loop.status is not LoopStatus.PENDING
    )


def runner_alive(loop: LoopRecord) -> bool:
    """Whether another process runs this loop (a runner on another host is assumed alive)."""
    if loop.runner_pid is None:
        return False
    if loop.runner_host != socket.gethostname():
        return True
    if loop.runner_pid == os.getpid():
        return False  # this process: only its manager knows, and it asks before calling this
    return pid_exists(loop.runner_pid)


def write_sentinel(workdir: Path, signal: ExternalSignal) -> Path:
    """Ask the loop's runner to pause or stop after its running iteration."""
    ralph_dir(workdir)
    path = sentinel_path(workdir, signal)
    path.touch()
    return path


def clear_sentinels(workdir: Path) -> list[ExternalSignal]:
    """Remove pause and stop requests nobody read; returns those that were there."""
    cleared = []
    for signal in ExternalSignal:
        path = sentinel_path(workdir, signal)
        if path.exists():
            path.unlink(missing_ok=True)
            cleared.append(signal)
    return cleared


def settle(
    store: Store,
    loop: LoopRecord,
    status: LoopStatus,
    detail: str,
    *,
    why: StopReason = StopReason.USER_STOP,
) -> tuple[LoopRecord, list[EventRecord]]:
    """Pause, stop or fail (for the reason ``why``) a loop that no runner runs; returns it and
    the events recorded.

    Iterations its last runner left running are marked interrupted (and counted), their
    agents stopped (``engine/leftovers``); a stopped hook-mode loop's tracker is deactivated.
    Raises IllegalTransition when the state machine forbids the move.
    """
    transition(loop.status, status)
    found = interrupt_leftovers(store, [loop])[loop.id]
    leftovers = found.interrupted
    ended = status is not LoopStatus.PAUSED
    reason = why if ended else None
    loop = replace(
        found.applied_to(loop),
        status=status,
        stop_reason=reason,
        stop_detail=detail,
        rate_limited_until=None,
        runner_pid=None,
        ended_at=datetime.now(UTC) if ended else None,
    )
    reason_text = reason and str(reason)
    summary: dict[str, Any] = {"iteration": loop.iteration, "cost_usd": loop.cost_usd}
    if leftovers:
        summary["interrupted_iterations"] = leftovers
    batch: list[tuple[str, dict[str, Any]]] = []
    if found.agents or found.recovered:
        agents = [agent.data() for agent in found.agents]
        batch.append((str(EventType.WARNING), {"message": found.message(), "agents": agents}))
    batch.append(
        (
            str(EventType.STATE_CHANGED),
            {"status": str(status), "reason": reason_text, "detail": detail},
        )
    )
    batch.append((str(_END_EVENT[status]), {"reason": reason_text, **summary}))
    loop, events = store.save_loop_with_events(loop, batch)
    if loop.mode == "hook" and reason is not None:
        from ralphctl.engine.hookmode.managed import end_session  # only hook mode needs it

        end_session(loop, reason)
    return loop, events


def control_directly(
    store: Store, loop_id: str, signal: ExternalSignal, *, now: bool = False
) -> tuple[LoopRecord, str | None]:
    """Pause or stop a loop with no manager at hand: through its sentinel file when another
    process runs it (it acts after the running iteration), else in the database. A fleet
    loop's worker is asked through PostgreSQL instead (``fleet.control``; ``now``: a pause
    interrupts the running iteration, as a stop does).

    Returns the loop and, when the runner was asked, what was asked of whom.
    """
    loop = store.get_loop(loop_id)
    if store.url.startswith("postgresql"):  # fleet loops live there only
        asked = _control_in_fleet(store, loop.id, signal, now=now)
        if asked is not None:
            return asked
    target = _TARGET[signal]
    transition(loop.status, target)
    # A paused loop whose runner lives waits for an answer to its agent's question.
    waiting = (LoopStatus.RUNNING, LoopStatus.RATE_LIMITED, LoopStatus.PAUSED)
    if loop.status in waiting and runner_alive(loop):
        write_sentinel(Path(loop.workdir), signal)
        runner = f"process {loop.runner_pid} on {loop.runner_host}"
        return loop, f"asked its runner ({runner}) to {signal} after the running iteration"
    settled, _ = settle(store, loop, target, f"{signal} requested")
    return settled, None


def _control_in_fleet(
    store: Store, loop_id: str, signal: ExternalSignal, *, now: bool
) -> tuple[LoopRecord, str | None] | None:
    """``control_directly`` for a fleet loop; None when the loop is not one. Imported here:
    SQLAlchemy and the ``fleet`` extra, which `ralphctl run` never needs."""
    from ralphctl.fleet.placement import is_fleet_loop

    if not is_fleet_loop(store, loop_id):
        return None
    from ralphctl.fleet.control import control_fleet_loop

    controlled = control_fleet_loop(store, loop_id, signal, now=now)
    if controlled.worker is None:
        return controlled.loop, None
    when = "now" if now or signal is ExternalSignal.STOP else "after the running iteration"
    return controlled.loop, f"asked worker {controlled.worker} to {signal} {when}"
