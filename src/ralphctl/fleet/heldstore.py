"""The store a worker runs a held loop with: every transaction is fenced by the loop's lease,
and a checkpoint is pushed as it is recorded.

``HeldCore`` is the store's SQLAlchemy side (``store.core.CoreStore``) with one difference:
each transaction begins with ``leases.fenced``, so a worker that lost its lease (paused,
partitioned, its lease expired and taken over) has every read and write refused with
``LeaseLost`` and nothing it does reaches the records; the row stays share-locked until the
transaction ends, so a takeover waits for a write in flight. A checkpoint (the runner commits
the clone after each iteration) is pushed to the loop branch inside the transaction that
records it with its iteration: a stale worker cannot push past a takeover either, and a push
the remote refuses (the branch moved) is ``LeaseLost`` too. A worker killed between the push
and the commit leaves the branch one commit ahead of the records, of an iteration not recorded
as finished: the next holder starts from the last recorded checkpoint instead (``job``), and
its first push replaces that commit. Each transaction announces the loop's events to the
servers (``engine.eventfeed``), delivered if it commits. The engine is the worker's, shared by
its loops.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine

from ralphctl.engine.eventfeed import announce
from ralphctl.fleet.gitremote import push_loop
from ralphctl.fleet.leaserules import Lease
from ralphctl.fleet.leases import fenced
from ralphctl.store.core import CoreStore
from ralphctl.store.errors import StoreError
from ralphctl.store.records import CheckpointRecord


class LeaseLost(StoreError):
    """The worker no longer holds the loop: it must stop its agent and drop the loop."""


class HeldCore(CoreStore):
    """The queries of one held loop, each fenced by its lease; checkpoints pushed as recorded.
    ``pushed`` is the remote loop branch's sha as this worker last saw it (None: absent)."""

    def __init__(self, engine: Engine, lease: Lease, workdir: Path, pushed: str | None) -> None:
        super().__init__(engine)
        self.lease = lease
        self.workdir = workdir
        self.pushed = pushed

    def close(self) -> None:
        """The engine is the worker's: it outlives the loop."""

    @contextmanager
    def transaction(self, doing: str) -> Iterator[Connection]:
        with super().transaction(doing) as conn:
            if fenced(conn, self.lease.loop_id, self.lease.generation):
                raise LeaseLost(
                    f"cannot {doing}: this worker lost loop {self.lease.loop_id}"
                    f" (its lease, generation {self.lease.generation}, was taken over)"
                )
            yield conn
            announce(conn, self.lease.loop_id)

    def checkpoint_in(
        self,
        conn: Connection,
        loop_id: str,
        iteration: int,
        commit_sha: str,
        snapshot: dict[str, Any],
    ) -> CheckpointRecord:
        """Push the checkpoint, then record it, in the caller's (fenced) transaction."""
        outcome = push_loop(self.workdir, loop_id, self.pushed)
        if outcome.fenced:
            raise LeaseLost(
                f"cannot push the checkpoint of iteration {iteration}: the loop branch is"
                f" at {outcome.found or 'nothing'}, not at {self.pushed or 'nothing'}"
            )
        self.pushed = outcome.sha
        return super().checkpoint_in(conn, loop_id, iteration, commit_sha, snapshot)
