"""Pause, resume and stop of a fleet loop, from any CLI or server.

The loop's lease says who may act. The controller first tries to take the lease itself
(``leases.acquire``, as ``control:<host>:<pid>``), in one transaction:

- A worker holds it: the request is kept for that worker and announced to it
  (``controlchannel.send``, both when the transaction commits). It pauses after the running
  iteration, or at once (``now``), or stops at once, as a server's manager would; its runner
  records that, the lease is released and its job ends.
- Nobody holds it (pending, its worker dead, or ended): the controller now holds it, so no
  worker starts the loop meanwhile; the loop is settled in the database
  (``engine.control.settle``), any request kept for a former holder withdrawn and the lease
  released. A job that tried meanwhile is run again
  when the lease expires, and finds nothing to run.

Resume holds the lease the same way: a loop no worker holds is marked running (with no
runner) and its job queued again (``queue.defer_loop``); the worker that takes it continues
it from its last push, as after a takeover. A loop its circuit breaker failed gets the one
trial iteration the engine gives it on one machine: its breaker is half opened here, as the
runner does for a failed loop it resumes. A loop a worker holds cannot be resumed.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta

from ralphctl.domain.breaker import allow_trial
from ralphctl.domain.breaker import from_dict as breaker_from_dict
from ralphctl.domain.breaker import to_dict as breaker_to_dict
from ralphctl.domain.conditions import ExternalSignal
from ralphctl.domain.config import ConfigInvalid, LoopConfig
from ralphctl.domain.events import EventType
from ralphctl.domain.states import LoopStatus, Runner, transition, why_not_resumable
from ralphctl.engine.control import UnsupportedControl, settle
from ralphctl.engine.eventfeed import announce
from ralphctl.fleet.controlchannel import FleetRequest, send, withdraw
from ralphctl.fleet.fleetloops import fleet_loop
from ralphctl.fleet.leases import acquire, current_lease, release
from ralphctl.fleet.queue import defer_loop, new_app
from ralphctl.store.records import EventRecord, LoopRecord
from ralphctl.store.repository import Store

#: How long a controller holds a loop while it settles it: far longer than a settle takes.
CONTROL_TTL = timedelta(seconds=30)
RESUMED_DETAIL = "resumed: queued for a worker"
_TARGET = {ExternalSignal.PAUSE: LoopStatus.PAUSED, ExternalSignal.STOP: LoopStatus.STOPPED}
_RUNNABLE = (LoopStatus.PENDING, LoopStatus.RUNNING, LoopStatus.RATE_LIMITED)


@dataclass(frozen=True, slots=True)
class Controlled:
    """The loop after a request; ``worker``: the worker asked (it acts, then records it),
    None when the loop was changed here; ``events``: those recorded here."""

    loop: LoopRecord
    worker: str | None
    events: Sequence[EventRecord] = ()


def control_fleet_loop(
    store: Store, loop_id: str, signal: ExternalSignal, *, now: bool = False
) -> Controlled:
    """Pause (after the running iteration, or ``now``) or stop (at once) a fleet loop.
    Raises IllegalTransition when the state machine forbids it."""
    loop = store.get_loop(loop_id)
    target = _TARGET[signal]
    transition(loop.status, target)
    if signal is ExternalSignal.STOP:
        request = FleetRequest.STOP
    else:
        request = FleetRequest.PAUSE_NOW if now else FleetRequest.PAUSE
    with _holding(store, loop.id, request) as worker:
        if worker is not None:
            return Controlled(loop, worker)
        settled, events = settle(store, store.get_loop(loop.id), target, f"{signal} requested")
        return Controlled(settled, None, events)


def mark_resumed(store: Store, loop_id: str) -> tuple[Controlled, tuple[str, ...]]:
    """Make a fleet loop no worker holds runnable again; returns it and the labels its job
    needs (``requeue`` queues it). UnsupportedControl when it cannot be resumed."""
    loop = store.get_loop(loop_id)
    with _holding(store, loop.id, None) as worker:
        if worker is not None:
            raise UnsupportedControl(f"loop {loop.id}: it is running on worker {worker}")
        loop = store.get_loop(loop.id)
        why = why_not_resumable(loop.status, loop.mode, Runner.GONE)
        if why is not None:
            raise UnsupportedControl(f"loop {loop.id}: {why}")
        events: list[EventRecord] = []
        if loop.status not in _RUNNABLE:
            transition(loop.status, LoopStatus.RUNNING)
            data = {"status": str(LoopStatus.RUNNING), "reason": None, "detail": RESUMED_DETAIL}
            loop, events = store.save_loop_with_events(
                replace(
                    loop,
                    status=LoopStatus.RUNNING,
                    stop_reason=None,
                    stop_detail=RESUMED_DETAIL,
                    ended_at=None,
                    runner_pid=None,
                    breaker_state=_trial_breaker(loop),
                ),
                [(str(EventType.STATE_CHANGED), data)],
            )
        with store.transaction("read the fleet loop") as conn:
            origin = fleet_loop(conn, loop.id)
    labels = origin.labels if origin is not None else ()
    return Controlled(loop, None, events), labels


def resume_fleet_loop(store: Store, loop_id: str) -> LoopRecord:
    """``mark_resumed``, then ``requeue``: for a caller with no event loop (the CLI)."""
    controlled, labels = mark_resumed(store, loop_id)
    asyncio.run(requeue(store.url, controlled.loop.id, labels))
    return controlled.loop


async def requeue(url: str, loop_id: str, labels: Sequence[str]) -> bool:
    """Queue a start of the loop for a worker (``url`` resolved); False when one is queued."""
    app = new_app(url)
    async with app.open_async():
        return await defer_loop(app, loop_id, labels)


def _trial_breaker(loop: LoopRecord) -> dict[str, object] | None:
    """The breaker a resumed loop runs with: one trial iteration when it failed on it."""
    if loop.status is not LoopStatus.FAILED or not loop.breaker_state:
        return loop.breaker_state
    try:
        config = LoopConfig.from_mapping(loop.config).breaker
    except ConfigInvalid as exc:
        raise UnsupportedControl(f"loop {loop.id}: its stored settings are invalid: {exc}") from exc
    trial = allow_trial(breaker_from_dict(loop.breaker_state), config, time.time())
    return breaker_to_dict(trial)


@contextmanager
def _holding(store: Store, loop_id: str, request: FleetRequest | None) -> Iterator[str | None]:
    """Hold the loop's lease for the block (yielding None), or, when a worker holds it, send
    it ``request`` (if any) and yield that worker's name."""
    with store.transaction("take the fleet loop's lease") as conn:
        lease = acquire(conn, loop_id, controller_name(), CONTROL_TTL)
        holder = None
        if lease is None:
            current = current_lease(conn, loop_id)
            holder = (current.worker if current is not None else None) or "unknown"
            if request is not None:
                send(conn, loop_id, request)
    if lease is None:
        yield holder
        return
    try:
        yield None
    finally:
        with store.transaction("release the fleet loop's lease") as conn:
            release(conn, lease)
            withdraw(conn, loop_id)  # settled here: nothing is left for a holder to do
            announce(conn, loop_id)  # the events recorded here, to every server


def controller_name() -> str:
    """The name a controller holds a loop's lease under: never a worker's."""
    return f"control:{socket.gethostname()}:{os.getpid()}"
