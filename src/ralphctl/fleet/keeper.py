"""Keeping a held loop's lease: renewed in the background while the loop runs.

Every third of the lease's time to live the keeper renews it. When the database answers that
the lease was taken over, or when the keeper could not renew it before it expired (the
database unreachable: another worker may take the loop over by now), the lease is lost: the
keeper calls ``on_lost`` once and stops. It never decides for the loop; the job stops its
agent and drops the loop. With each renewal it reads the control request waiting for the
holder (``controlchannel.pending``) and hands it to ``on_request``, in case its notification
was missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from ralphctl.fleet.controlchannel import FleetRequest, pending
from ralphctl.fleet.errors import FleetError
from ralphctl.fleet.leaserules import Lease
from ralphctl.fleet.leases import release, renew

log = logging.getLogger(__name__)


class LeaseKeeper:
    """Renews ``lease`` every ``ttl / 3`` until stopped or lost."""

    def __init__(self, engine: Engine, lease: Lease, ttl: timedelta) -> None:
        self.engine = engine
        self.lease = lease
        self.ttl = ttl
        self.lost = False
        self.on_lost: Callable[[], None] = lambda: None
        self.on_request: Callable[[FleetRequest | None], None] = lambda request: None
        self._valid_until = time.monotonic() + ttl.total_seconds()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._keep(), name=f"lease {self.lease.loop_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def release(self) -> None:
        """Stop renewing, then free the loop for any worker at once (unless it was lost)."""
        await self.stop()
        if not self.lost:
            await asyncio.to_thread(self._release)

    async def _keep(self) -> None:
        interval = self.ttl.total_seconds() / 3
        while not self.lost:
            await asyncio.sleep(interval)
            started = time.monotonic()
            try:
                renewed, request = await asyncio.to_thread(self._renew)
            except (SQLAlchemyError, FleetError) as exc:
                log.warning("loop %s: cannot renew its lease: %s", self.lease.loop_id, exc)
                if time.monotonic() >= self._valid_until:
                    self._lose("its lease expired while the database could not be reached")
                continue
            if renewed is None:
                self._lose("another worker took its lease over")
                return
            self.lease = renewed
            self._valid_until = started + self.ttl.total_seconds()
            self.on_request(request)

    def _lose(self, why: str) -> None:
        log.warning("loop %s: lost (%s): dropping it", self.lease.loop_id, why)
        self.lost = True
        self.on_lost()

    def _renew(self) -> tuple[Lease | None, FleetRequest | None]:
        with self.engine.begin() as conn:
            renewed = renew(conn, self.lease, self.ttl)
            return renewed, pending(conn, self.lease.loop_id) if renewed is not None else None

    def _release(self) -> None:
        with self.engine.begin() as conn:
            release(conn, self.lease)
