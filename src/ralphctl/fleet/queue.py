"""The fleet's job queue: procrastinate's, one job per start of a fleet loop.

A job is ``run_loop(loop_id)`` on the queue named by the loop's required labels (``ralph``
without labels, ``ralph:gpu``, ``ralph:agent=codex,gpu``); a worker listens to the queue of
every subset of its own labels, so it only runs loops whose labels it has. Each job carries
two locks named by the loop: its queueing lock keeps one start of a loop queued at a time, its
job lock lets one job of a loop run at a time. A job whose worker died (no procrastinate
heartbeat) is retried by the live workers (``retry_stalled``).

A worker that was judged dead but comes back (frozen, cut off) still ends the job it ran;
procrastinate would then finish or retry a job that is no longer its own, even one another
worker runs or has queued again. ``FleetJobManager`` lets such a job go instead.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Sequence
from datetime import datetime

import procrastinate
from procrastinate.exceptions import AlreadyEnqueued, JobAborted
from procrastinate.jobs import Job, Status
from procrastinate.manager import JobManager
from procrastinate.retry import BaseRetryStrategy, RetryDecision

from ralphctl.fleet.errors import FleetError

TASK_NAME = "ralphctl.fleet.run_loop"
QUEUE = "ralph"
MAX_LABELS = 8  # a worker listens to 2^labels queues
RETRY_AFTER_S = 30
MAX_ATTEMPTS = 20
FULL_RETRY_S = 2  # the fleet at its limit: look for a free slot again this soon

log = logging.getLogger(__name__)


class LeaseBusy(FleetError):
    """Another worker holds the loop's lease until ``until``: the job waits for it."""

    def __init__(self, loop_id: str, until: datetime | None) -> None:
        self.until = until
        super().__init__(f"loop {loop_id} is held by another worker until {until}")


class FleetFull(FleetError):
    """The fleet runs as many loops as its limit allows: the job waits for a free slot."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the fleet runs its limit of {limit} loops")


class FleetRetry(BaseRetryStrategy):
    """When a job is run again: at the lease's expiry when another worker held the loop, soon
    when the fleet was full, at once when its worker shut down, a little later after a
    failure of git or the database; never after a bug."""

    def get_retry_decision(self, *, exception: BaseException, job: Job) -> RetryDecision | None:
        if isinstance(exception, LeaseBusy):
            return RetryDecision(retry_at=exception.until)
        if isinstance(exception, FleetFull):
            return RetryDecision(retry_in={"seconds": FULL_RETRY_S})
        if isinstance(exception, (JobAborted, asyncio.CancelledError)):
            return RetryDecision(retry_in={"seconds": 0})
        if isinstance(exception, FleetError) and job.attempts < MAX_ATTEMPTS:
            return RetryDecision(retry_in={"seconds": RETRY_AFTER_S})
        return None


def queue_for(labels: Sequence[str]) -> str:
    """The queue of a loop that requires ``labels`` (normalized: ``fleetloops.normal_labels``)."""
    return QUEUE if not labels else f"{QUEUE}:{','.join(labels)}"


def queues_served(labels: Sequence[str]) -> list[str]:
    """The queues a worker with ``labels`` listens to: one per subset of its labels."""
    if len(labels) > MAX_LABELS:
        raise FleetError(f"a worker takes at most {MAX_LABELS} labels, not {len(labels)}")
    subsets = (
        combination
        for size in range(len(labels) + 1)
        for combination in itertools.combinations(labels, size)
    )
    return [queue_for(subset) for subset in subsets]


def conninfo(url: str) -> str:
    """The libpq address of a resolved ``postgresql+psycopg://`` URL, for procrastinate."""
    return "postgresql://" + url.partition("://")[2]


class FleetJobManager(JobManager):
    """procrastinate's job manager, except that a worker finishes or retries only a job that
    is still its own (running, under its worker id): one it ran while judged dead has been
    queued again for, or finished by, another worker, and is left to that one."""

    async def finish_job(self, job: Job, status: Status, delete_job: bool) -> None:
        if await self._still_ours(job):
            await super().finish_job(job, status, delete_job)

    async def retry_job(
        self,
        job: Job,
        retry_at: datetime | None = None,
        priority: int | None = None,
        queue: str | None = None,
        lock: str | None = None,
    ) -> None:
        if await self._still_ours(job):
            await super().retry_job(job, retry_at, priority, queue, lock)

    async def _still_ours(self, job: Job) -> bool:
        row = await self.connector.execute_query_one_async(
            query="SELECT status, worker_id FROM procrastinate_jobs WHERE id = %(job_id)s",
            job_id=job.id,
        )
        ours: bool = (
            row is not None and row["status"] == "doing" and row["worker_id"] == job.worker_id
        )
        if not ours:
            log.info("job %s was taken over by another worker: left to it", job.call_string)
        return ours


def new_app(url: str, *, pool_size: int | None = None) -> procrastinate.App:
    """A procrastinate app on the fleet's database (``url`` resolved); ``pool_size``: at most
    so many connections (psycopg_pool's default, 4 kept open, when None), one kept open."""
    if pool_size is None:
        connector = procrastinate.PsycopgConnector(conninfo=conninfo(url))
    else:
        connector = procrastinate.PsycopgConnector(
            conninfo=conninfo(url), min_size=1, max_size=pool_size
        )
    app = procrastinate.App(connector=connector)
    app.job_manager = FleetJobManager(app.connector)
    return app


async def defer_loop(app: procrastinate.App, loop_id: str, labels: Sequence[str]) -> bool:
    """Queue a start of the loop; False when one is queued already. ``app`` is open."""
    job = app.configure_task(
        TASK_NAME, queue=queue_for(labels), lock=loop_id, queueing_lock=loop_id
    )
    try:
        await job.defer_async(loop_id=loop_id)
    except AlreadyEnqueued:
        return False
    return True


async def retry_stalled(app: procrastinate.App, seconds_since_heartbeat: float) -> int:
    """Queue again the fleet jobs whose worker stopped beating; how many. ``app`` is open."""
    manager = app.job_manager
    stalled = await manager.get_stalled_jobs(
        task_name=TASK_NAME, seconds_since_heartbeat=seconds_since_heartbeat
    )
    count = 0
    for job in stalled:
        await manager.retry_job(job)
        count += 1
    return count
