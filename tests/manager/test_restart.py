"""A new manager picks up what the last one left: after a crash, or after a clean shutdown."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ralphctl.domain.config import LoopConfig
from ralphctl.domain.states import LoopStatus
from ralphctl.engine.manager import LoopManager
from ralphctl.engine.sentinels import sentinel_path
from ralphctl.engine.statefile import ralph_dir
from ralphctl.store.records import EventRecord, IterationRecord, LoopRecord
from ralphctl.store.repository import Store
from tests.manager.conftest import DONE, SLOW, next_event, run, spec, until

DEAD_PID = 999_999


def left_behind(
    db: Store,
    workdir: Path,
    *steps: dict[str, Any],
    status: LoopStatus = LoopStatus.RUNNING,
    done: int = 1,
    **changes: Any,
) -> LoopRecord:
    """A loop as a runner that died mid-iteration leaves it: ``done`` iterations recorded, the
    next one still marked running."""
    config = LoopConfig.from_mapping(spec(workdir, *steps).settings)
    loop = db.create_loop(
        LoopRecord(
            id=uuid.uuid4().hex[:12],
            name="left behind",
            mode="fresh",
            agent="scripted",
            workdir=str(workdir),
            task="Do the work.",
            config=config.to_json(),
            status=LoopStatus.PENDING,
            created_at=datetime.now(UTC),
        )
    )
    if status is LoopStatus.PENDING:
        return loop
    now = datetime.now(UTC)
    for n in range(1, done + 2):
        db.begin_iteration(IterationRecord(loop_id=loop.id, n=n, started_at=now))
    for n in range(1, done + 1):
        db.complete_iteration(
            IterationRecord(loop_id=loop.id, n=n, started_at=now, status="ok", cost_usd=0.1),
            replace(loop, iteration=n, cost_usd=0.1 * n),
        )
    return db.save_loop(
        replace(
            loop,
            **{
                "status": status,
                "iteration": done,
                "cost_usd": 0.1 * done,
                "started_at": now,
                "runner_pid": DEAD_PID,
                "runner_host": socket.gethostname(),
                **changes,
            },
        )
    )


async def all_ended(manager: LoopManager) -> None:
    await until(lambda: not manager.running_ids and not manager.queued_ids)


def test_after_a_crash_the_unfinished_iteration_is_interrupted_and_the_loop_resumes(
    db, new_workdir
):
    workdir = new_workdir()
    loop = left_behind(db, workdir, DONE)
    ralph_dir(workdir)
    sentinel_path(workdir, "pause").touch()  # type: ignore[arg-type]

    async def scenario() -> EventRecord:
        manager = LoopManager(db)
        subscription = manager.subscribe()
        await manager.start()
        warning = await next_event(subscription, "warning", loop.id)
        await all_ended(manager)
        await manager.close()
        return warning

    warning = run(scenario())
    final = db.get_loop(loop.id)
    assert (final.status, final.iteration) == (LoopStatus.COMPLETED, 3)
    assert final.cost_usd == pytest.approx(0.11)
    assert [(it.n, it.status) for it in db.iterations(loop.id)] == [
        (1, "ok"),
        (2, "interrupted"),
        (3, "ok"),
    ]
    assert warning.data["interrupted_iterations"] == [2]
    assert warning.data["cleared_sentinels"] == ["pause"]
    assert not sentinel_path(workdir, "pause").exists()  # type: ignore[arg-type]


def test_loops_that_were_running_resume_before_pending_ones(db, new_workdir):
    pending = left_behind(db, new_workdir(), DONE, status=LoopStatus.PENDING)
    limited = left_behind(
        db,
        new_workdir(),
        DONE,
        status=LoopStatus.RATE_LIMITED,
        rate_limited_until=datetime.now(UTC) - timedelta(seconds=1),
    )
    running = left_behind(db, new_workdir(), DONE)

    async def scenario() -> list[str]:
        manager = LoopManager(db, max_concurrent=1)
        subscription = manager.subscribe()
        await manager.start()
        await all_ended(manager)
        await manager.close()
        return [e.loop_id async for e in subscription if e.event_type in ("started", "resumed")]

    order = run(scenario())
    assert order == [limited.id, running.id, pending.id]
    for loop in (pending, limited, running):
        assert db.get_loop(loop.id).status is LoopStatus.COMPLETED


def test_with_leave_paused_nothing_runs_until_resumed(db, new_workdir):
    running = left_behind(db, new_workdir(), DONE)
    pending = left_behind(db, new_workdir(), DONE, status=LoopStatus.PENDING)

    async def scenario() -> tuple[tuple[str, ...], tuple[str, ...]]:
        manager = LoopManager(db, resume_on_start=False)
        await manager.start()
        idle = manager.running_ids, manager.queued_ids
        await manager.resume(pending.id)
        await all_ended(manager)
        await manager.close()
        return idle

    assert run(scenario()) == ((), ())
    paused = db.get_loop(running.id)
    assert (paused.status, paused.iteration) == (LoopStatus.PAUSED, 2)
    assert [it.status for it in db.iterations(running.id)] == ["ok", "interrupted"]
    assert db.get_loop(pending.id).status is LoopStatus.COMPLETED


def test_a_loop_whose_runner_lives_elsewhere_is_left_alone(db, new_workdir):
    alive = left_behind(db, new_workdir(), DONE, runner_pid=os.getppid())

    async def scenario() -> tuple[str, ...]:
        manager = LoopManager(db)
        await manager.start()
        idle = manager.running_ids
        await manager.close()
        return idle

    assert run(scenario()) == ()
    assert db.get_loop(alive.id).status is LoopStatus.RUNNING
    assert [it.status for it in db.iterations(alive.id)] == ["ok", "running"]


def test_close_leaves_running_loops_to_the_next_manager(db, new_workdir):
    async def first_manager() -> LoopRecord:
        manager = LoopManager(db)
        await manager.start()
        subscription = manager.subscribe()
        loop = await manager.create(spec(new_workdir(), SLOW, DONE))
        await next_event(subscription, "iteration_started", loop.id)
        await manager.close()
        return manager.get(loop.id)

    async def second_manager(loop_id: str) -> LoopRecord:
        manager = LoopManager(db)
        await manager.start()
        await all_ended(manager)
        await manager.close()
        return manager.get(loop_id)

    suspended = run(first_manager())
    assert (suspended.status, suspended.runner_pid) == (LoopStatus.RUNNING, None)
    final = run(second_manager(suspended.id))
    assert (final.status, final.iteration) == (LoopStatus.COMPLETED, 2)
    assert [it.status for it in db.iterations(final.id)] == ["interrupted", "ok"]
    types = [e.event_type for e in db.events_since(0, loop_id=final.id)]
    assert types.count("suspended") == 1
    assert types.count("resumed") == 1


def test_close_keeps_a_rate_limited_loop_parked(db, new_workdir):
    until_later = datetime.now(UTC) + timedelta(hours=1)
    limited = left_behind(
        db, new_workdir(), DONE, status=LoopStatus.RATE_LIMITED, rate_limited_until=until_later
    )

    async def scenario() -> None:
        manager = LoopManager(db)
        subscription = manager.subscribe()
        await manager.start()
        await next_event(subscription, "waiting", limited.id)
        await manager.close()

    run(scenario())
    parked = db.get_loop(limited.id)
    assert parked.status is LoopStatus.RATE_LIMITED
    assert parked.rate_limited_until == until_later
    assert parked.runner_pid is None
