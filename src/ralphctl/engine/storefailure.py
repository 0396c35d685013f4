"""When the database fails under a running loop: wait until it is writable, then go on.

A runner whose store write fails (a foreign write lock held beyond the busy timeout, a full
disk, a lost PostgreSQL) ends with ``StoreError``. The manager then notes the failure in the
store, retrying with back-off (on the store's thread, ``engine/storethread``, so the server
keeps answering meanwhile) until the database takes a write again; then it resumes the loop,
whose unrecorded iteration is marked interrupted by the new runner. A loop whose store fails
``MAX_RECOVERIES`` times without completing an iteration in between is failed instead,
visibly: status ``failed``, reason ``store_failed``, an error event and a log line.
``StoreHealth`` is what ``/api/health`` reports meanwhile, without asking the database.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ralphctl.domain.events import EventType
from ralphctl.engine import storethread
from ralphctl.store.errors import StoreError
from ralphctl.store.records import EventRecord, LoopRecord

if TYPE_CHECKING:
    from ralphctl.store.repository import Store

log = logging.getLogger("ralphctl.store")

MAX_RECOVERIES = 3  # store failures of one loop with no iteration completed in between
RETRY_DELAYS_S = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)  # then every 30 s until it works


@dataclass
class StoreHealth:
    """The database as the manager last found it: ``problem`` is None while writes succeed."""

    problem: str | None = None
    since: datetime | None = None

    def failed(self, problem: str) -> None:
        if self.problem is None:
            self.since = datetime.now(UTC)
        self.problem = problem

    def recovered(self) -> None:
        if self.problem is not None:
            log.info("the database takes writes again (it failed since %s)", self.since)
        self.problem = self.since = None


def retry_delay(attempt: int) -> float:
    """How long to wait before try ``attempt`` (from 0)."""
    return RETRY_DELAYS_S[min(attempt, len(RETRY_DELAYS_S) - 1)]


async def note_failure(
    store: Store,
    health: StoreHealth,
    loop_id: str,
    message: str,
    publish: Callable[[EventRecord], object],
) -> LoopRecord:
    """Record the failure as an error event of the loop (its runner gone), retrying with
    back-off until the database takes it; the event goes to ``publish`` (from the store's
    thread, ``engine/storethread``); returns the loop."""
    attempt = 0
    while True:
        await asyncio.sleep(retry_delay(attempt))
        try:
            loop, _event = await storethread.submit_delivering(
                store, lambda done: publish(done[1]), _record, store, loop_id, message
            )
            return loop
        except StoreError as exc:
            health.failed(str(exc))
            attempt += 1
            log.warning("loop %s: the database still fails (try %d): %s", loop_id, attempt, exc)


def _record(store: Store, loop_id: str, message: str) -> tuple[LoopRecord, EventRecord]:
    loop = store.save_loop(replace(store.get_loop(loop_id), runner_pid=None))
    return loop, store.append_event(loop_id, str(EventType.ERROR), {"message": message})
