"""The loop manager, with the scripted agent: slots, queueing, control, one loop per work dir."""

from __future__ import annotations

import pytest

from ralphctl.domain.states import IllegalTransition, LoopStatus, StopReason
from ralphctl.engine.manager import (
    ConcurrencyLimitReached,
    InvalidSpec,
    LoopAlreadyExists,
    LoopManager,
    LoopRequest,
    Stats,
)
from ralphctl.engine.sentinels import sentinel_path
from ralphctl.store.records import LoopRecord
from tests.manager.conftest import DONE, SLOW, next_event, run, spec, until

WORKING = {"text": "working", "cost_usd": 0.1, "tokens": {"input": 100, "output": 10}}


async def finished(manager: LoopManager, loop_id: str) -> LoopRecord:
    await until(lambda: loop_id not in manager.running_ids)
    return manager.get(loop_id)


def test_a_created_loop_runs_until_the_agent_declares_completion(db, new_workdir):
    async def scenario() -> tuple[LoopRecord, LoopRecord]:
        manager = LoopManager(db)
        await manager.start()
        created = await manager.create(spec(new_workdir(), WORKING, DONE))
        final = await finished(manager, created.id)
        await manager.close()
        return created, final

    created, final = run(scenario())
    assert created.status is LoopStatus.RUNNING
    assert final.status is LoopStatus.COMPLETED
    assert final.iteration == 2
    assert final.cost_usd == pytest.approx(0.11)


def test_beyond_max_concurrent_loops_wait_as_pending_and_start_in_order(db, new_workdir):
    async def scenario() -> tuple[
        tuple[LoopRecord, ...], tuple[LoopStatus, ...], tuple[str, ...], list[str]
    ]:
        manager = LoopManager(db, max_concurrent=1)
        await manager.start()
        subscription = manager.subscribe()
        first = await manager.create(spec(new_workdir(), SLOW))
        second = await manager.create(spec(new_workdir(), DONE))
        third = await manager.create(spec(new_workdir(), DONE))
        queued = (manager.get(second.id).status, manager.get(third.id).status)
        order = manager.queued_ids
        await manager.stop(first.id)
        await finished(manager, second.id)
        await finished(manager, third.id)
        await manager.close()
        started = [e.loop_id async for e in subscription if e.event_type == "started"]
        return (first, second, third), queued, order, started

    loops, queued, order, started = run(scenario())
    first, second, third = loops
    assert (second.status, third.status) == (LoopStatus.PENDING, LoopStatus.PENDING)
    assert queued == (LoopStatus.PENDING, LoopStatus.PENDING)
    assert order == (second.id, third.id)
    assert started == [first.id, second.id, third.id]
    assert [db.get_loop(loop.id).status for loop in (second, third)] == [LoopStatus.COMPLETED] * 2


def test_a_full_manager_refuses_a_loop_that_may_not_wait(db, new_workdir):
    async def scenario() -> None:
        manager = LoopManager(db, max_concurrent=1)
        await manager.start()
        await manager.create(spec(new_workdir(), SLOW))
        try:
            with pytest.raises(ConcurrencyLimitReached, match="max_concurrent = 1"):
                await manager.create(spec(new_workdir(), DONE), queue=False)
        finally:
            await manager.close()

    run(scenario())
    assert len(db.list_loops()) == 1


def test_one_active_loop_per_work_dir(db, new_workdir):
    workdir = new_workdir()

    async def scenario() -> LoopRecord:
        manager = LoopManager(db)
        await manager.start()
        first = await manager.create(spec(workdir, SLOW))
        with pytest.raises(LoopAlreadyExists, match=first.id):
            await manager.create(spec(workdir, DONE))
        await manager.pause(first.id, now=True)
        with pytest.raises(LoopAlreadyExists, match="paused"):
            await manager.create(spec(workdir, DONE))
        await manager.stop(first.id)
        second = await manager.create(spec(workdir, DONE))
        final = await finished(manager, second.id)
        await manager.close()
        return final

    assert run(scenario()).status is LoopStatus.COMPLETED


def test_pause_waits_for_the_iteration_and_resume_keeps_every_counter(db, new_workdir):
    steps = [{**WORKING, "sleep_s": 1}, WORKING, {**DONE, "cost_usd": 0.1}]

    async def scenario() -> tuple[LoopRecord, ...]:
        manager = LoopManager(db)
        await manager.start()
        subscription = manager.subscribe()
        loop = await manager.create(spec(new_workdir(), *steps))
        await next_event(subscription, "iteration_started", loop.id)
        requested = await manager.pause(loop.id)
        await next_event(subscription, "paused", loop.id)
        paused = manager.get(loop.id)
        resumed = await manager.resume(loop.id)
        final = await finished(manager, loop.id)
        await manager.close()
        return requested, paused, resumed, final

    requested, paused, resumed, final = run(scenario())
    assert requested.status is LoopStatus.RUNNING  # the pause waits for the iteration
    assert (paused.status, paused.iteration) == (LoopStatus.PAUSED, 1)
    assert paused.cost_usd == pytest.approx(0.1)
    assert resumed.status is LoopStatus.RUNNING
    assert (final.status, final.iteration) == (LoopStatus.COMPLETED, 3)
    assert final.cost_usd == pytest.approx(0.3)
    assert final.tokens_input == 200
    iterations = db.iterations(final.id)
    assert [(it.n, it.status) for it in iterations] == [(1, "ok"), (2, "ok"), (3, "ok")]


def test_pause_now_interrupts_the_running_iteration(db, new_workdir):
    async def scenario() -> tuple[LoopRecord, LoopRecord]:
        manager = LoopManager(db)
        await manager.start()
        subscription = manager.subscribe()
        loop = await manager.create(spec(new_workdir(), SLOW, DONE))
        await next_event(subscription, "iteration_started", loop.id)
        paused = await manager.pause(loop.id, now=True)
        await manager.resume(loop.id)
        final = await finished(manager, loop.id)
        await manager.close()
        return paused, final

    paused, final = run(scenario())
    assert (paused.status, paused.stop_reason, paused.iteration) == (LoopStatus.PAUSED, None, 1)
    assert (final.status, final.iteration) == (LoopStatus.COMPLETED, 2)
    assert [it.status for it in db.iterations(final.id)] == ["interrupted", "ok"]


def test_stop_interrupts_the_iteration_and_ends_the_loop_as_stopped(db, new_workdir):
    async def scenario() -> LoopRecord:
        manager = LoopManager(db)
        await manager.start()
        subscription = manager.subscribe()
        loop = await manager.create(spec(new_workdir(), SLOW))
        await next_event(subscription, "iteration_started", loop.id)
        stopped = await manager.stop(loop.id)
        await manager.close()
        return stopped

    stopped = run(scenario())
    assert (stopped.status, stopped.stop_reason) == (LoopStatus.STOPPED, StopReason.USER_STOP)
    assert stopped.ended_at is not None
    assert [it.status for it in db.iterations(stopped.id)] == ["interrupted"]


def test_a_queued_loop_can_be_stopped_before_it_ever_runs(db, new_workdir):
    async def scenario() -> tuple[LoopRecord, tuple[str, ...]]:
        manager = LoopManager(db, max_concurrent=1)
        await manager.start()
        await manager.create(spec(new_workdir(), SLOW))
        queued = await manager.create(spec(new_workdir(), DONE))
        stopped = await manager.stop(queued.id)
        order = manager.queued_ids
        await manager.close()
        return stopped, order

    stopped, order = run(scenario())
    assert (stopped.status, stopped.iteration) == (LoopStatus.STOPPED, 0)
    assert order == ()
    assert db.iterations(stopped.id) == []


def test_illegal_transitions_are_refused_with_the_allowed_moves(db, new_workdir):
    async def scenario() -> None:
        manager = LoopManager(db, max_concurrent=1)
        await manager.start()
        running = await manager.create(spec(new_workdir(), SLOW))
        queued = await manager.create(spec(new_workdir(), DONE))
        with pytest.raises(IllegalTransition, match="cannot go from running to running"):
            await manager.resume(running.id)
        with pytest.raises(IllegalTransition, match="allowed from pending: running, stopped"):
            await manager.pause(queued.id)
        await manager.pause(running.id, now=True)
        with pytest.raises(IllegalTransition, match="from paused to paused"):
            await manager.pause(running.id)
        await manager.stop(queued.id)
        await manager.resume(running.id)
        await manager.stop(running.id)
        with pytest.raises(IllegalTransition, match="from stopped to stopped"):
            await manager.stop(running.id)
        await manager.close()

    run(scenario())


def test_a_completed_loop_cannot_be_resumed(db, new_workdir):
    async def scenario() -> None:
        manager = LoopManager(db)
        await manager.start()
        loop = await manager.create(spec(new_workdir(), DONE))
        await finished(manager, loop.id)
        try:
            with pytest.raises(IllegalTransition, match=r"none \(it has ended\)"):
                await manager.resume(loop.id)
        finally:
            await manager.close()

    run(scenario())


def test_a_pause_sentinel_file_pauses_a_managed_loop_too(db, new_workdir):
    workdir = new_workdir()
    touch = f"touch {sentinel_path(workdir, 'pause')}"  # type: ignore[arg-type]

    async def scenario() -> tuple[LoopRecord, LoopRecord]:
        manager = LoopManager(db)
        await manager.start()
        loop = await manager.create(spec(workdir, {"text": "pausing", "bash": [touch]}, DONE))
        paused = await finished(manager, loop.id)
        await manager.resume(loop.id)
        final = await finished(manager, loop.id)
        await manager.close()
        return paused, final

    paused, final = run(scenario())
    assert (paused.status, paused.iteration) == (LoopStatus.PAUSED, 1)
    assert (final.status, final.iteration) == (LoopStatus.COMPLETED, 2)


def test_a_resumed_loop_needs_a_free_slot(db, new_workdir):
    async def scenario() -> None:
        manager = LoopManager(db, max_concurrent=1)
        await manager.start()
        first = await manager.create(spec(new_workdir(), SLOW))
        await manager.pause(first.id, now=True)
        await manager.create(spec(new_workdir(), SLOW))
        try:
            with pytest.raises(ConcurrencyLimitReached):
                await manager.resume(first.id)
        finally:
            await manager.close()

    run(scenario())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mode": "dreamy"}, "mode 'dreamy': use fresh or hook"),
        ({"mode": "hook"}, "which the scripted agent cannot do; agents that can: claude"),
        ({"task": "  "}, "the task is empty"),
        ({"workflow": "no-such-workflow"}, "no-such-workflow"),
    ],
)
def test_a_spec_that_cannot_run_is_refused_before_anything_is_stored(
    db, new_workdir, change, message
):
    from dataclasses import replace

    async def scenario() -> None:
        manager = LoopManager(db)
        await manager.start()
        try:
            with pytest.raises(InvalidSpec, match=message):
                await manager.create(replace(spec(new_workdir(), DONE), **change))
        finally:
            await manager.close()

    run(scenario())
    assert db.list_loops() == []


def test_a_missing_work_dir_or_agent_script_is_refused(db, tmp_path, new_workdir):
    async def scenario() -> None:
        manager = LoopManager(db)
        await manager.start()
        good = spec(new_workdir(), DONE)
        try:
            with pytest.raises(InvalidSpec, match="not a directory"):
                await manager.create(LoopRequest("t", tmp_path / "nowhere", good.settings))
            missing = {**good.settings, "script": "/no/such"}
            with pytest.raises(InvalidSpec, match="script not found"):
                await manager.create(LoopRequest("t", good.workdir, missing))
        finally:
            await manager.close()

    run(scenario())


def test_stats_count_active_loops_and_sum_every_loop(db, new_workdir):
    async def scenario() -> Stats:
        manager = LoopManager(db, max_concurrent=1)
        await manager.start()
        subscription = manager.subscribe()
        done = await manager.create(spec(new_workdir(), WORKING, DONE))
        await finished(manager, done.id)
        slow = await manager.create(spec(new_workdir(), SLOW))
        await manager.create(spec(new_workdir(), DONE))
        await next_event(subscription, "iteration_started", slow.id)
        stats = manager.stats()
        await manager.close()
        return stats

    stats = run(scenario())
    assert stats.active.loops == 2
    assert stats.active_by_status == {"pending": 1, "running": 1, "paused": 0, "rate_limited": 0}
    assert stats.active.iterations == 1  # the second loop's running one
    assert stats.all_time.cost_usd == pytest.approx(0.11)
    assert stats.all_time.iterations == 3  # two of the first loop, the second's running one
    assert stats.all_time.tokens == 110
