"""Hook-mode loops under the manager, with the scripted stand-in for ``claude``
(tests/hookmode/fake_claude.py), which runs the Stop hook that the runner injects."""

from __future__ import annotations

import socket
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.claude import ClaudeAdapter
from ralphctl.domain.conditions import ExternalSignal
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.engine.control import control_directly
from ralphctl.engine.hookmode.setup import prepare
from ralphctl.engine.hookmode.sockets import runtime_dir
from ralphctl.engine.manager import LoopManager, UnsupportedControl
from ralphctl.engine.starting import LoopRequest
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.paths import tracker_path
from ralphctl.hook.tracker import load, update_fields
from ralphctl.store.records import IterationRecord, LoopRecord
from ralphctl.store.repository import Store
from tests.manager.conftest import next_event, run, until

DONE = "All done.\n<promise>COMPLETE</promise>"


def hook_spec(workdir: Path, **settings: Any) -> LoopRequest:
    given = {"error_backoff_cap": 0, **settings}
    return LoopRequest(task="Write the notes.", workdir=workdir, settings=given, mode="hook")


def tracker(loop: LoopRecord) -> dict[str, Scalar]:
    assert loop.agent_session_id is not None
    loaded = load(tracker_path(loop.workdir, loop.agent_session_id))
    assert loaded is not None
    return loaded.fields


def sockets() -> list[str]:
    folder = runtime_dir()
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


async def finished(manager: LoopManager, loop_id: str) -> LoopRecord:
    await until(lambda: loop_id not in manager.running_ids)
    return manager.get(loop_id)


def test_a_hook_mode_loop_runs_one_session_until_its_bound(db, new_workdir, fake_claude):
    fake_claude([{"text": "one"}, {"text": "two"}, {"text": "three"}])

    async def scenario() -> tuple[LoopRecord, LoopRecord, list[str]]:
        manager = LoopManager(db)
        await manager.start()
        subscription = manager.subscribe()
        created = await manager.create(hook_spec(new_workdir(), max_iterations=3))
        final = await finished(manager, created.id)
        await manager.close()
        return created, final, [e.event_type async for e in subscription]

    created, final, events = run(scenario())
    assert (created.mode, created.status, created.agent) == ("hook", LoopStatus.RUNNING, "claude")
    assert (final.status, final.stop_reason) == (LoopStatus.STOPPED, StopReason.MAX_ITERATIONS)
    assert [(it.n, it.status, it.output_summary) for it in db.iterations(final.id)] == [
        (1, "ok", "one"),
        (2, "ok", "two"),
        (3, "ok", "three"),
    ]
    assert final.cost_usd == pytest.approx(0.018)  # the session's reported total
    assert events[:2] == ["created", "started"]
    assert events.count("iteration_completed") == 3
    assert events[-1] == "stopped"
    fields = tracker(final)
    assert (fields["active"], fields["ended_reason"], fields["loop_id"]) == (
        False,
        "max_iterations",
        final.id,
    )
    assert sockets() == []  # the runner's socket went with it


def test_a_hook_mode_loop_pauses_at_its_next_stop_and_resumes_the_same_session(
    db, new_workdir, fake_claude
):
    played = fake_claude(
        [{"text": "one"}, {"text": "two", "sleep_s": 1}, {"text": "not played"}],
        [{"text": "three"}, {"text": DONE}],
    )

    async def scenario() -> tuple[LoopRecord, dict[str, Scalar], LoopRecord, list[str]]:
        manager = LoopManager(db)
        await manager.start()
        subscription = manager.subscribe()
        loop = await manager.create(hook_spec(new_workdir(), max_iterations=9))
        await next_event(subscription, "iteration_completed", loop.id)
        await manager.pause(loop.id)
        paused = await finished(manager, loop.id)
        fields = tracker(paused)
        await manager.resume(loop.id)
        final = await finished(manager, loop.id)
        await manager.close()
        return paused, fields, final, [e.event_type async for e in subscription]

    paused, fields, final, events = run(scenario())
    assert (paused.status, paused.iteration, paused.ended_at) == (LoopStatus.PAUSED, 2, None)
    assert (fields["active"], fields["paused"], fields["iteration"]) == (False, True, 2)
    assert (final.status, final.stop_reason) == (LoopStatus.COMPLETED, StopReason.COMPLETION)
    assert [(it.n, it.status, it.output_summary) for it in db.iterations(final.id)][:3] == [
        (1, "ok", "one"),
        (2, "ok", "two"),
        (3, "ok", "three"),
    ]
    assert final.iteration == 4
    assert final.cost_usd == pytest.approx(0.024)  # both processes' reported totals
    assert played.read_text() == "2"  # the second one continued the session (--resume)
    assert events.count("paused") == events.count("resumed") == 1
    assert tracker(final)["active"] is False


def test_a_hook_mode_loop_paused_now_keeps_its_runtime_and_stop_ends_its_session(
    db, new_workdir, fake_claude
):
    fake_claude([{"text": "one"}, {"text": "two", "sleep_s": 60}], [{"text": "x", "sleep_s": 60}])

    async def scenario() -> tuple[LoopRecord, dict[str, Scalar], LoopRecord]:
        manager = LoopManager(db)
        await manager.start()
        subscription = manager.subscribe()
        loop = await manager.create(hook_spec(new_workdir(), max_iterations=5))
        await next_event(subscription, "iteration_completed", loop.id)
        paused = await manager.pause(loop.id, now=True)
        fields = tracker(paused)
        await manager.resume(loop.id)
        stopped = await manager.stop(loop.id)
        with pytest.raises(UnsupportedControl, match="cannot be entered again"):
            await manager.resume(loop.id)
        await manager.close()
        return paused, fields, stopped

    paused, fields, stopped = run(scenario())
    assert paused.status is LoopStatus.PAUSED
    assert (fields["active"], fields["paused"], fields["iteration"]) == (False, True, 2)
    assert (stopped.status, stopped.stop_reason) == (LoopStatus.STOPPED, StopReason.USER_STOP)
    assert stopped.runtime_s >= paused.runtime_s > 0
    assert [(it.n, it.status) for it in db.iterations(stopped.id)] == [
        (1, "ok"),
        (2, "interrupted"),
        (3, "interrupted"),
    ]
    assert (tracker(stopped)["active"], tracker(stopped)["ended_reason"]) == (False, "user_stop")
    assert sockets() == []


def test_a_queued_hook_mode_loop_starts_its_session_and_its_runtime_when_it_launches(
    db, new_workdir, fake_claude
):
    played = fake_claude([{"text": "busy", "sleep_s": 60}], [{"text": "one"}, {"text": DONE}])

    async def scenario() -> tuple[LoopRecord, dict[str, Scalar], LoopRecord]:
        manager = LoopManager(db, max_concurrent=1)
        await manager.start()
        first = await manager.create(hook_spec(new_workdir()))
        queued = await manager.create(hook_spec(new_workdir(), max_runtime=3600))
        armed = tracker(queued)
        path = tracker_path(queued.workdir, str(queued.agent_session_id))
        update_fields(path, {"started_at": "2001-01-01T00:00:00Z"})  # a long wait in the queue
        await until(played.exists)  # the first session is under way
        await manager.stop(first.id)
        final = await finished(manager, queued.id)
        await manager.close()
        return queued, armed, final

    queued, armed, final = run(scenario())
    assert queued.status is LoopStatus.PENDING
    assert (armed["active"], armed["loop_id"]) == (True, queued.id)
    assert (final.status, final.stop_reason) == (LoopStatus.COMPLETED, StopReason.COMPLETION)
    assert final.iteration == 2  # the hour of runtime counted from its launch


def test_a_queued_hook_mode_loop_stopped_before_it_ran_ends_its_tracker(
    db, new_workdir, fake_claude
):
    fake_claude([{"text": "busy", "sleep_s": 60}])

    async def scenario() -> LoopRecord:
        manager = LoopManager(db, max_concurrent=1)
        await manager.start()
        await manager.create(hook_spec(new_workdir()))
        queued = await manager.create(hook_spec(new_workdir()))
        stopped = await manager.stop(queued.id)
        await manager.close()
        return stopped

    stopped = run(scenario())
    assert (stopped.status, stopped.stop_reason) == (LoopStatus.STOPPED, StopReason.USER_STOP)
    assert db.iterations(stopped.id) == []
    assert (tracker(stopped)["active"], tracker(stopped)["ended_reason"]) == (False, "user_stop")


def test_a_shut_down_manager_pauses_its_hook_mode_loops_which_the_next_one_leaves_paused(
    db, new_workdir, fake_claude
):
    fake_claude([{"text": "one"}, {"text": "two", "sleep_s": 60}])

    async def scenario() -> tuple[LoopRecord, tuple[str, ...]]:
        manager = LoopManager(db)
        await manager.start()
        subscription = manager.subscribe()
        loop = await manager.create(hook_spec(new_workdir()))
        await next_event(subscription, "iteration_completed", loop.id)
        await manager.close()
        after = LoopManager(db)
        await after.start()
        resumed = after.running_ids
        await after.close()
        return db.get_loop(loop.id), resumed

    loop, resumed = run(scenario())
    assert (loop.status, loop.stop_detail) == (LoopStatus.PAUSED, "paused as its runner shut down")
    assert resumed == ()
    assert (tracker(loop)["active"], tracker(loop)["paused"]) == (False, True)


def test_start_up_stops_an_orphaned_hook_mode_loop_and_removes_only_dead_runners_sockets(
    db: Store, new_workdir, fake_claude
):
    workdir = new_workdir()
    ready = prepare(db, ClaudeAdapter(), "Write the notes.", workdir, LoopConfig(), name="crashed")
    dead = subprocess.Popen(["true"])
    dead.wait()
    db.save_loop(
        replace(
            ready.loop,
            status=LoopStatus.RUNNING,
            iteration=1,
            runner_pid=dead.pid,
            runner_host=socket.gethostname(),
        )
    )
    db.begin_iteration(
        IterationRecord(loop_id=ready.loop.id, n=2, started_at=ready.loop.created_at)
    )
    folder = runtime_dir()
    folder.mkdir(mode=0o700)
    alive = subprocess.Popen(["sleep", "60"])
    stale = folder / f"{dead.pid}-{ready.loop.id}.sock"
    listening = folder / f"{dead.pid}-0123456789ab.sock"  # a reused pid: it still answers
    busy = folder / f"{alive.pid}-ba9876543210.sock"  # its process lives
    held = []
    for path, listen in ((stale, False), (listening, True), (busy, False)):
        bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        bound.bind(str(path))
        if listen:
            bound.listen()
            held.append(bound)
        else:
            bound.close()
    try:

        async def scenario() -> tuple[str, ...]:
            manager = LoopManager(db)
            await manager.start()
            running = manager.running_ids
            await manager.close()
            return running

        running = run(scenario())
    finally:
        alive.kill()
        alive.wait()
        for bound in held:
            bound.close()
    loop = db.get_loop(ready.loop.id)
    assert running == ()
    assert (loop.status, loop.stop_reason) == (LoopStatus.STOPPED, StopReason.INTERRUPTED)
    assert "cannot be entered again" in (loop.stop_detail or "")
    assert [(it.n, it.status) for it in db.iterations(loop.id)] == [(2, "interrupted")]
    assert (tracker(loop)["active"], tracker(loop)["ended_reason"]) == (False, "interrupted")
    assert sorted(p.name for p in folder.iterdir()) == sorted([listening.name, busy.name])


def test_without_a_manager_a_hook_mode_loop_is_paused_or_stopped_in_the_database(
    db: Store, new_workdir
):
    ready = prepare(db, ClaudeAdapter(), "Write the notes.", new_workdir(), LoopConfig(), name="x")
    db.save_loop(replace(ready.loop, status=LoopStatus.RUNNING))

    paused, asked = control_directly(db, ready.loop.id, ExternalSignal.PAUSE)
    assert (asked, paused.status) == (None, LoopStatus.PAUSED)  # no runner runs it
    stopped, asked = control_directly(db, ready.loop.id, ExternalSignal.STOP)

    assert asked is None
    assert (stopped.status, stopped.stop_reason) == (LoopStatus.STOPPED, StopReason.USER_STOP)
    assert (tracker(stopped)["active"], tracker(stopped)["ended_reason"]) == (False, "user_stop")
