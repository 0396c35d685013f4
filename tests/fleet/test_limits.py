"""The fleet's limits: a fleet-wide cap on running loops (its slots), a loop that waits for a
worker with its labels and says so, and a job that its worker no longer owns left alone."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from procrastinate.jobs import Status
from sqlalchemy import Engine, text
from typer.testing import CliRunner

from ralphctl.cli.app import app
from ralphctl.fleet.fleetlimit import FleetSlots
from ralphctl.fleet.fleetloops import FleetLoop, store_fleet_loop
from ralphctl.fleet.queue import FULL_RETRY_S, FleetFull, FleetRetry, defer_loop, new_app
from ralphctl.fleet.registry import register
from ralphctl.store.url import resolve_url
from tests.store.factories import new_loop

pytestmark = pytest.mark.postgres

runner = CliRunner()


def ralphctl(*args: str) -> str:
    done = runner.invoke(app, list(args), env={"COLUMNS": "250"})
    assert done.exit_code == 0, done.output
    return done.output


def test_the_fleet_runs_no_more_loops_than_its_slots(fleet_engine: Engine) -> None:
    slots = FleetSlots(fleet_engine, limit=2)
    first, second = slots.take(), slots.take()
    assert first is not None
    assert second is not None
    assert {first.number, second.number} == {0, 1}
    assert slots.take() is None, "both slots are held, on any worker"

    first.free()
    third = slots.take()
    assert third is not None
    assert third.number == first.number
    third.free()
    second.free()


def test_a_slot_whose_worker_died_is_free_again(fleet_engine: Engine) -> None:
    slots = FleetSlots(fleet_engine, limit=1)
    held = slots.take()
    assert held is not None
    held.conn.invalidate()  # the worker's connection dropped, as on kill -9

    again = slots.take()
    assert again is not None
    again.free()


def test_a_job_of_a_full_fleet_looks_for_a_slot_again_soon() -> None:
    decision = FleetRetry().get_retry_decision(exception=FleetFull(4), job=None)  # type: ignore[arg-type]
    assert decision is not None
    assert decision.retry_at is not None
    assert decision.retry_at - datetime.now(UTC) <= timedelta(seconds=FULL_RETRY_S)


def test_a_fleet_limit_below_one_is_refused(fleet_engine: Engine) -> None:
    with pytest.raises(ValueError, match="at least one loop"):
        FleetSlots(fleet_engine, limit=0)


def store_waiting_loop(engine: Engine, loop_id: str, labels: tuple[str, ...]) -> None:
    with engine.begin() as conn:
        origin = FleetLoop(loop_id, "git@host:team/app.git", "main", labels)
        store_fleet_loop(conn, new_loop(loop_id), origin)


def test_a_loop_needing_a_label_no_live_worker_has_says_what_it_waits_for(
    postgres_url: str, fleet_engine: Engine
) -> None:
    store_waiting_loop(fleet_engine, "loop-gpu", ("gpu",))
    store_waiting_loop(fleet_engine, "loop-plain", ())
    with fleet_engine.begin() as conn:
        register(conn, "build-01", ["linux"], 2, "1.0")

    waiting = "waiting for a worker with label gpu"
    listed = ralphctl("loops", "ls", "--db", postgres_url)
    assert f"pending, {waiting}" in listed
    assert listed.count("waiting for") == 1, "build-01 can run the loop without labels"
    assert waiting in ralphctl("loops", "show", "loop-gpu", "--db", postgres_url)
    assert "waiting for" not in ralphctl("loops", "show", "loop-plain", "--db", postgres_url)
    assert f"loop loop-gpu: {waiting}" in ralphctl("workers", "ls", "--db", postgres_url)

    with fleet_engine.begin() as conn:
        register(conn, "gpu-01", ["gpu", "linux"], 1, "1.0")
    assert "waiting for" not in ralphctl("loops", "ls", "--db", postgres_url)
    assert "waiting for" not in ralphctl("workers", "ls", "--db", postgres_url)


def test_a_loop_waits_for_any_worker_while_none_is_alive(
    postgres_url: str, fleet_engine: Engine
) -> None:
    store_waiting_loop(fleet_engine, "loop-plain", ())
    with fleet_engine.begin() as conn:
        register(conn, "build-01", [], 1, "1.0")
        conn.execute(text("UPDATE workers SET heartbeat_at = heartbeat_at - interval '1 hour'"))

    shown = ralphctl("loops", "show", "loop-plain", "--db", postgres_url)
    assert "pending, waiting for a worker" in shown


def test_a_worker_leaves_alone_a_job_another_worker_took_over(
    postgres_url: str, fleet_engine: Engine
) -> None:
    """A worker judged dead comes back and ends its job: the job, queued again for another
    worker meanwhile, stays queued (procrastinate alone would mark it finished)."""

    async def scenario() -> str:
        queue = new_app(resolve_url(postgres_url))
        async with queue.open_async():
            manager = queue.job_manager
            await defer_loop(queue, "loop-1", [])
            frozen = await manager.register_worker()
            job = await manager.fetch_job(queues=None, worker_id=frozen)
            assert job is not None
            await manager.retry_job(job)  # a live worker judged it stalled: queued again
            await manager.finish_job(job, status=Status.SUCCEEDED, delete_job=True)
            await manager.retry_job(job, retry_at=None)
        with fleet_engine.begin() as conn:
            status: str = conn.execute(text("SELECT status FROM procrastinate_jobs")).scalar_one()
        return status

    assert asyncio.run(scenario()) == "todo"


def test_every_worker_takes_the_fleet_limit_from_a_flag_or_the_environment() -> None:
    shown = ralphctl("worker", "--help")
    assert "--fleet-limit" in shown
    assert "RALPHCTL_FLEET_LIMIT" in shown
