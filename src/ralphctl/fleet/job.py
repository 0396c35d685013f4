"""One fleet job: a worker holds a loop, runs its iterations in a clone, and lets it go.

1. Acquire the loop's lease. Held by another worker (unexpired): ``LeaseBusy``, and the job
   runs again when that lease expires (``queue.FleetRetry``).
2. Check the loop branch out into the worker's cache (``gitremote.checkout_loop``): from the
   last push, wherever it was made, or from the last recorded checkpoint when that push was
   never recorded (its worker died between the two: ``gitremote.rewind_loop``).
3. Run the loop with the engine's own runner, on a store fenced by the lease whose every
   checkpoint (one per iteration) is pushed in the transaction that records it with its
   iteration (``heldstore``). Budgets, iteration count, cost, tokens, runtime and breaker
   come from the records, so a loop taken over goes on with them; the iteration its dead
   holder left running is marked interrupted by the runner's start, as on one machine.
4. A control request (``controlchannel``: heard from before the lease is held, and read back
   from the lease row on acquiring it and at every renewal) pauses or stops the loop as the
   engine's pause and stop do; the runner records it and the lease is released. The lease
   lost (``keeper``) or a push refused: the agent is killed and the loop dropped, nothing
   more written. The worker shutting down: the loop is suspended (left active), the lease
   released and the job queued again. Otherwise the runner ends the loop as it would
   anywhere, and the lease is released.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

from sqlalchemy import Engine

from ralphctl.domain.conditions import ExternalSignal
from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.engine.control import settle
from ralphctl.engine.runner import Interruption, RunControl
from ralphctl.engine.starting import (
    AdapterFactory,
    InvalidSpec,
    default_adapter,
    new_runner,
    resume_plan,
)
from ralphctl.fleet.controlchannel import ControlListener, FleetRequest, Inbox, pending
from ralphctl.fleet.fleetloops import FleetLoop, fleet_loop
from ralphctl.fleet.gitremote import checkout_loop, rewind_loop
from ralphctl.fleet.heldstore import HeldCore, LeaseLost
from ralphctl.fleet.keeper import LeaseKeeper
from ralphctl.fleet.leaserules import Lease
from ralphctl.fleet.leases import acquire, current_lease
from ralphctl.fleet.queue import LeaseBusy
from ralphctl.store.repository import Store

log = logging.getLogger(__name__)

RUNNABLE = (LoopStatus.PENDING, LoopStatus.RUNNING, LoopStatus.RATE_LIMITED)


@dataclass(frozen=True, slots=True)
class WorkerSetup:
    """What every job of a worker shares: its database, name, cache, lease time and the
    connection it hears control requests on."""

    engine: Engine
    url: str
    name: str
    cache: Path
    lease_ttl: timedelta
    control: ControlListener
    adapters: AdapterFactory = default_adapter


async def run_fleet_loop(setup: WorkerSetup, loop_id: str) -> None:
    """Hold loop ``loop_id`` and run it to its end, or until this worker loses it; listening
    for its control requests from before the lease is held (``controlchannel``)."""
    async with setup.control.inbox(loop_id) as inbox:
        held = await asyncio.to_thread(_hold, setup, loop_id)
        if held is None:
            log.warning("loop %s is not a fleet loop: its job does nothing", loop_id)
            return
        origin, lease, request = held
        inbox.take(request)
        keeper = LeaseKeeper(setup.engine, lease, setup.lease_ttl)
        keeper.on_request = inbox.take
        keeper.start()
        try:
            await _run_held(setup, origin, keeper, inbox)
        except LeaseLost as exc:
            keeper.lost = True
            log.warning("loop %s dropped: %s", loop_id, exc)
        finally:
            await keeper.release()


def _hold(setup: WorkerSetup, loop_id: str) -> tuple[FleetLoop, Lease, FleetRequest | None] | None:
    with setup.engine.begin() as conn:
        origin = fleet_loop(conn, loop_id)
        if origin is None:
            return None
        lease = acquire(conn, loop_id, setup.name, setup.lease_ttl)
        if lease is None:
            current = current_lease(conn, loop_id)
            raise LeaseBusy(loop_id, current.expires_at if current is not None else None)
        return origin, lease, pending(conn, loop_id)


async def _run_held(
    setup: WorkerSetup, origin: FleetLoop, keeper: LeaseKeeper, inbox: Inbox
) -> None:
    loop_id = origin.loop_id
    checkout = await asyncio.to_thread(
        checkout_loop, origin.repo_url, setup.cache, loop_id, origin.base_branch
    )
    core = HeldCore(setup.engine, keeper.lease, checkout.workdir, checkout.pushed)
    recorded = await asyncio.to_thread(core.checkpoints, loop_id)
    last = recorded[-1].commit_sha if recorded else None
    if checkout.pushed != last:  # its holder died between the push and the record
        log.warning("loop %s: its branch is ahead of its records; back to %s", loop_id, last)
        await asyncio.to_thread(rewind_loop, checkout, last, origin.base_branch)
    store = Store.over(core, setup.url)
    loop = await asyncio.to_thread(store.get_loop, loop_id)
    if loop.status not in RUNNABLE:
        log.info("loop %s is %s: nothing to run", loop_id, loop.status)
        return
    loop = replace(loop, workdir=str(checkout.workdir))
    try:
        plan = resume_plan(loop, adapters=setup.adapters)
    except InvalidSpec as exc:
        detail = f"cannot start: {exc}"
        await asyncio.to_thread(
            settle, store, loop, LoopStatus.STOPPED, detail, why=StopReason.USER_STOP
        )
        return
    control = RunControl()
    keeper.on_lost = lambda: _drop(control)
    requests = Requested(control)
    inbox.on_request(requests.take)
    runner = new_runner(store, plan, control=control, external=requests.between_iterations)
    running = asyncio.create_task(runner.run())
    try:
        await asyncio.shield(running)
    except asyncio.CancelledError:  # the worker shuts down: leave the loop for another
        if not running.done():
            control.request(Interruption.SUSPEND)
            await asyncio.gather(running, return_exceptions=True)
        raise


class Requested:
    """The control requests of a running loop, as the engine's pause and stop do them: a
    pause waits for the running iteration to end (the runner asks between iterations), a
    pause now or a stop interrupts it (recorded interrupted)."""

    def __init__(self, control: RunControl) -> None:
        self.control = control
        self.pause = False

    def take(self, request: FleetRequest) -> None:
        if request is FleetRequest.PAUSE:
            self.pause = True
        else:
            outcome = Interruption.STOP if request is FleetRequest.STOP else Interruption.PAUSE
            self.control.request(outcome)

    def between_iterations(self) -> ExternalSignal | None:
        return ExternalSignal.PAUSE if self.pause else None


def _drop(control: RunControl) -> None:
    """The lease is lost: kill the agent at once; the runner's next write is refused."""
    control.request(Interruption.SUSPEND)
    control.force.set()
