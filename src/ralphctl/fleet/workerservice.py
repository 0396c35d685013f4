"""``ralphctl worker``: one machine's member of the fleet.

It registers (``registry``), beats every ``beat_s`` and, with each beat, queues again the
fleet jobs whose worker stopped beating (it died: ``queue.retry_stalled``); procrastinate's
worker runs the jobs (``job.run_fleet_loop``), ``concurrency`` at a time, from the queues its
labels serve; with a fleet-wide limit, a job first takes one of the fleet's slots
(``fleetlimit``) and, when none is free, is queued again a moment later. On SIGINT or
SIGTERM procrastinate stops taking jobs and, after ``drain_s``, cancels the running ones:
each suspends its loop, releases it and is queued again for another worker. The worker then
leaves the registry.

Its PostgreSQL connections are sized to ``concurrency``: the store's pool keeps one per loop
slot (and one per fleet slot under a limit) plus one for the beats, procrastinate's at most
``QUEUE_CONNECTIONS``, and one connection listens for the control requests of all its loops.
procrastinate's pool is asynchronous and the store's synchronous: they cannot be one pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path

import procrastinate
from procrastinate.job_context import JobContext

from ralphctl import __version__
from ralphctl.fleet.backbone import open_fleet
from ralphctl.fleet.controlchannel import ControlListener
from ralphctl.fleet.fleetlimit import FleetSlots
from ralphctl.fleet.fleetloops import normal_labels
from ralphctl.fleet.job import WorkerSetup, run_fleet_loop
from ralphctl.fleet.queue import (
    TASK_NAME,
    FleetFull,
    FleetRetry,
    new_app,
    queues_served,
    retry_stalled,
)
from ralphctl.fleet.registry import deregister, heartbeat, register
from ralphctl.store.url import resolve_url

log = logging.getLogger(__name__)

SETUP_KEY = "ralphctl_fleet"
SLOTS_KEY = "ralphctl_fleet_slots"
#: procrastinate's pool: fetching jobs, finishing them, its heartbeat (its LISTEN is apart).
QUEUE_CONNECTIONS = 2


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """How a worker runs: ``beat_s`` is its heartbeat (and procrastinate's), a worker silent
    for ``stale_s`` is dead; ``drain_s`` is how long a shutdown waits for running loops;
    ``fleet_limit`` caps the loops running on the whole fleet (None: no cap)."""

    name: str
    concurrency: int
    labels: Sequence[str]
    cache: Path
    lease_ttl: timedelta = timedelta(seconds=30)
    beat_s: float = 5.0
    stale_s: float = 20.0
    drain_s: float = 10.0
    fleet_limit: int | None = None


async def run_worker(url: str | None, options: WorkerOptions) -> None:
    """Run fleet loops until interrupted (SIGINT, SIGTERM)."""
    resolved = resolve_url(url)
    kept = options.concurrency * (1 if options.fleet_limit is None else 2) + 1
    engine = await asyncio.to_thread(partial(open_fleet, resolved, pool_size=kept))
    labels = normal_labels(options.labels)
    control = ControlListener(resolved, options.name)
    setup = WorkerSetup(engine, resolved, options.name, options.cache, options.lease_ttl, control)
    slots = None if options.fleet_limit is None else FleetSlots(engine, options.fleet_limit)
    try:
        await asyncio.to_thread(_register, setup, labels, options.concurrency)
        await control.start()
        app = new_app(resolved, pool_size=QUEUE_CONNECTIONS)
        app.task(name=TASK_NAME, pass_context=True, retry=FleetRetry())(_run_job)
        async with app.open_async():
            beats = asyncio.create_task(_beat(app, setup, options))
            try:
                await app.run_worker_async(
                    queues=queues_served(labels),
                    name=options.name,
                    concurrency=options.concurrency,
                    additional_context={SETUP_KEY: setup, SLOTS_KEY: slots},
                    update_heartbeat_interval=options.beat_s,
                    stalled_worker_timeout=options.stale_s,
                    shutdown_graceful_timeout=options.drain_s,
                )
            finally:
                beats.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await beats
        await asyncio.to_thread(_deregister, setup)
    finally:
        await control.stop()
        engine.dispose()


async def _run_job(context: JobContext, loop_id: str) -> None:
    setup: WorkerSetup = context.additional_context[SETUP_KEY]
    slots: FleetSlots | None = context.additional_context[SLOTS_KEY]
    if slots is None:
        await run_fleet_loop(setup, loop_id)
        return
    slot = await asyncio.to_thread(slots.take)
    if slot is None:
        raise FleetFull(slots.limit)
    try:
        await run_fleet_loop(setup, loop_id)
    finally:
        await asyncio.to_thread(slot.free)


async def _beat(app: procrastinate.App, setup: WorkerSetup, options: WorkerOptions) -> None:
    while True:
        try:
            await asyncio.to_thread(_heartbeat, setup, options)
            retried = await retry_stalled(app, options.stale_s)
            if retried:
                log.info("queued again %d fleet jobs of workers that died", retried)
        except Exception as exc:  # the database away for a moment: beat again later
            log.warning("worker %s: heartbeat failed: %s", setup.name, exc)
        await asyncio.sleep(options.beat_s)


def _register(setup: WorkerSetup, labels: Sequence[str], concurrency: int) -> None:
    with setup.engine.begin() as conn:
        register(conn, setup.name, labels, concurrency, __version__)


def _heartbeat(setup: WorkerSetup, options: WorkerOptions) -> None:
    with setup.engine.begin() as conn:
        if not heartbeat(conn, setup.name):  # removed meanwhile: register again
            labels = normal_labels(options.labels)
            register(conn, setup.name, labels, options.concurrency, __version__)


def _deregister(setup: WorkerSetup) -> None:
    with setup.engine.begin() as conn:
        deregister(conn, setup.name)
