"""The fresh-context runner, end to end with the scripted agent (a real subprocess)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents import process
from ralphctl.agents.registry import adapter_for
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.engine.loops import new_loop as new_loop_record
from ralphctl.engine.runner import LoopRunner, RunControl
from ralphctl.engine.sentinels import sentinel_path
from ralphctl.engine.statefile import state_path
from ralphctl.store.errors import StoreError
from ralphctl.store.records import EventRecord, IterationRecord, LoopRecord
from ralphctl.store.repository import Store
from tests.engine.victims import live
from tests.store.faults import fail_storing_events_of

FAST = {"cooldown": 0, "checkpoint_interval": 0, "error_backoff_cap": 0}


class Recorder:
    """A LoopObserver that keeps what it saw."""

    def __init__(self) -> None:
        self.events: list[EventRecord] = []
        self.agent_events: list[Any] = []

    def on_event(self, event: EventRecord) -> None:
        self.events.append(event)

    def on_agent_event(self, iteration: int, event: Any) -> None:
        self.agent_events.append(event)

    def types(self) -> list[str]:
        return [event.event_type for event in self.events]


def new_loop(db: Store, workdir: Path, steps: list[dict[str, Any]], **settings: Any):
    script = workdir.parent / f"script-{uuid.uuid4().hex[:6]}.json"
    script.write_text(json.dumps({"steps": steps}))
    config = LoopConfig(**{**FAST, **settings, "agent": "scripted", "script": str(script)})
    loop = db.create_loop(
        LoopRecord(
            id=uuid.uuid4().hex[:12],
            name="test",
            mode="fresh",
            agent="scripted",
            workdir=str(workdir),
            task="Write the files.",
            config=config.to_json(),
            status=LoopStatus.PENDING,
            created_at=datetime.now(UTC),
        )
    )
    return loop, config


def run(db: Store, loop: LoopRecord, config: LoopConfig, **kwargs: Any) -> LoopRecord:
    adapter = adapter_for("scripted", options={"script": str(config.script)})
    return asyncio.run(LoopRunner(db, adapter, loop, config, **kwargs).run())


DONE = "All files written.\n<promise>COMPLETE</promise>"


def test_a_loop_runs_until_the_agent_declares_completion(db, workdir):
    steps = [
        {
            "text": "wrote a",
            "edits": [{"path": "a.txt", "content": "a"}],
            "cost_usd": 0.01,
            "tokens": {"input": 100, "output": 10},
        },
        {
            "text": "wrote b",
            "edits": [{"path": "b.txt", "content": "b"}],
            "cost_usd": 0.02,
            "tokens": {"input": 200, "output": 20},
        },
        {"text": DONE, "cost_usd": 0.03, "tokens": {"input": 300, "output": 30}},
    ]
    loop, config = new_loop(db, workdir, steps)
    observer = Recorder()
    final = run(db, loop, config, observer=observer)

    assert final.status is LoopStatus.COMPLETED
    assert final.stop_reason is StopReason.COMPLETION
    assert final.iteration == 3
    assert final.cost_usd == pytest.approx(0.06)
    assert (final.tokens_input, final.tokens_output) == (600, 60)
    assert (workdir / "a.txt").read_text() == "a"
    assert (workdir / "b.txt").read_text() == "b"
    iterations = db.iterations(loop.id)
    assert [it.status for it in iterations] == ["ok", "ok", "ok"]
    assert [it.completion_signal_found for it in iterations] == [False, False, True]
    assert [it.cost_source for it in iterations] == ["reported"] * 3
    assert iterations[0].output_summary == "wrote a"
    assert db.get_loop(loop.id) == final


def test_a_loop_never_ends_without_its_end_events(db, workdir, monkeypatch):
    """A runner that dies while storing the end (here: the events fail to insert) leaves the
    loop running for the next runner, never completed with no ``completed`` event."""
    loop, config = new_loop(db, workdir, [{"text": DONE}])
    fail_storing_events_of("completed", monkeypatch)
    with pytest.raises(StoreError, match="disk I/O error"):
        run(db, loop, config)

    assert db.get_loop(loop.id).status is LoopStatus.RUNNING
    assert db.events_of(loop.id, ["state_changed", "completed"]) == []


def test_every_step_is_published_as_a_stored_event_in_order(db, workdir):
    loop, config = new_loop(
        db, workdir, [{"text": DONE, "cost_usd": 0.5, "tokens": {"input": 1, "output": 1}}]
    )
    observer = Recorder()
    run(db, loop, config, observer=observer)
    assert observer.types() == [
        "started",
        "iteration_started",
        "iteration_completed",
        "tokens_used",
        "cost_incurred",
        "completion_signal_detected",
        "state_changed",
        "completed",
    ]
    seqs = [event.seq for event in observer.events]
    assert seqs == sorted(seqs)
    assert [e.seq for e in db.events_since(0, loop_id=loop.id)] == seqs


def test_the_agent_text_streams_to_the_observer_as_it_arrives(db, workdir):
    loop, config = new_loop(db, workdir, [{"text": DONE, "edits": [{"path": "x", "content": "x"}]}])
    observer = Recorder()
    run(db, loop, config, observer=observer)
    kinds = [type(event).__name__ for event in observer.agent_events]
    assert "SessionStarted" in kinds
    assert "ToolCall" in kinds
    assert "TextChunk" in kinds


@pytest.mark.parametrize(
    ("settings", "step", "reason", "iterations"),
    [
        ({"max_iterations": 3}, {"text": "working"}, StopReason.MAX_ITERATIONS, 3),
        ({"max_cost_usd": 0.25}, {"text": "working", "cost_usd": 0.1}, StopReason.MAX_COST, 3),
        (
            {"max_tokens": 250},
            {"text": "working", "tokens": {"input": 80, "output": 20}},
            StopReason.MAX_TOKENS,
            3,
        ),
        (
            {"circuit_breaker_threshold": 2},
            {"is_error": True, "api_error_status": 529},
            StopReason.CIRCUIT_BREAKER,
            2,
        ),
    ],
)
def test_each_budget_ends_the_loop_with_its_reason(db, workdir, settings, step, reason, iterations):
    loop, config = new_loop(db, workdir, [step], **settings)
    final = run(db, loop, config)
    assert final.status is reason.status
    assert final.stop_reason is reason
    assert final.iteration == iterations
    assert len(db.iterations(loop.id)) == iterations


def test_a_runtime_budget_kills_a_long_iteration_instead_of_overrunning(db, workdir):
    loop, config = new_loop(db, workdir, [{"text": "slow", "sleep_s": 30}], max_runtime=1.5)
    final = run(db, loop, config)
    assert final.stop_reason is StopReason.MAX_RUNTIME
    (only,) = db.iterations(loop.id)
    assert only.status == "timeout"
    assert final.runtime_s < 10


def test_a_blocked_agent_ends_the_loop_as_blocked_with_its_reason(db, workdir):
    steps = [
        {"text": "I need credentials.\n<promise>BLOCKED: no API key for the staging site</promise>"}
    ]
    loop, config = new_loop(db, workdir, steps)
    final = run(db, loop, config)
    assert final.status is LoopStatus.BLOCKED
    assert final.stop_detail == "no API key for the staging site"
    assert db.iterations(loop.id)[0].blocked_reason == "no API key for the staging site"


def test_errors_are_recorded_with_their_context_and_do_not_complete(db, workdir):
    steps: list[dict[str, Any]] = [
        {"text": DONE, "is_error": True, "api_error_status": 529, "stderr": "overloaded"},
        {"no_result": True, "stderr": "Segmentation fault", "garbage": ["not json {"]},
        {"text": DONE},
    ]
    loop, config = new_loop(db, workdir, steps)
    final = run(db, loop, config)
    assert final.status is LoopStatus.COMPLETED
    first, second, third = db.iterations(loop.id)
    assert (first.status, second.status, third.status) == ("error", "error", "ok")
    assert not first.completion_signal_found
    assert "529" in (first.error_message or "")
    assert "no result" in (second.error_message or "")
    recorded = db.errors(loop.id)
    assert [e.iteration for e in recorded] == [1, 2]
    assert "Segmentation fault" in recorded[1].context["stderr_tail"]
    assert recorded[1].context["unparsed_lines"] >= 1
    assert final.consecutive_errors == 0


def test_permission_denials_are_recorded_and_surfaced(db, workdir):
    steps = [
        {
            "text": DONE,
            "permission_denials": [{"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}],
        }
    ]
    loop, config = new_loop(db, workdir, steps)
    observer = Recorder()
    run(db, loop, config, observer=observer)
    (only,) = db.iterations(loop.id)
    assert only.permission_denials[0]["tool_name"] == "Bash"
    warnings = [e.data["message"] for e in observer.events if e.event_type == "warning"]
    assert any("permission denied for Bash" in message for message in warnings)


def test_the_state_file_follows_every_iteration_and_a_corrupt_one_is_rebuilt(db, workdir):
    (workdir / ".ralph").mkdir()
    state_path(workdir).write_text("{ this is not json")
    loop, config = new_loop(db, workdir, [{"text": "one"}, {"text": DONE}])
    observer = Recorder()
    run(db, loop, config, observer=observer)
    state = json.loads(state_path(workdir).read_text())
    assert state["status"] == "completed"
    assert [h["iteration"] for h in state["history"]] == [1, 2]
    assert state["history"][1]["markerFound"] is True
    warnings = [e.data["message"] for e in observer.events if e.event_type == "warning"]
    assert any("state.json is corrupt" in message for message in warnings)


def test_a_stop_sentinel_file_stops_the_loop_after_the_iteration(db, workdir):
    bash = f"touch {sentinel_path(workdir, 'stop')}"  # type: ignore[arg-type]
    loop, config = new_loop(db, workdir, [{"text": "working", "bash": [bash]}])
    final = run(db, loop, config)
    assert final.stop_reason is StopReason.USER_STOP
    assert final.iteration == 1
    assert not sentinel_path(workdir, "stop").exists()  # type: ignore[arg-type]


def test_an_interrupt_records_the_running_iteration_and_resume_keeps_the_totals(db, workdir):
    steps = [
        {"text": "one", "cost_usd": 0.1, "tokens": {"input": 10, "output": 1}},
        {"text": "two (slow)", "sleep_s": 30, "cost_usd": 0.1},
        {"text": DONE, "cost_usd": 0.1, "tokens": {"input": 10, "output": 1}},
    ]
    loop, config = new_loop(db, workdir, steps)
    control = RunControl()

    async def interrupt_during_iteration_two() -> LoopRecord:
        adapter = adapter_for("scripted", options={"script": str(config.script)})
        runner = LoopRunner(db, adapter, loop, config, control=control)
        task = asyncio.create_task(runner.run())
        while len(db.iterations(loop.id)) < 2:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        control.interrupt.set()
        return await task

    stopped = asyncio.run(interrupt_during_iteration_two())
    assert stopped.status is LoopStatus.STOPPED
    assert stopped.stop_reason is StopReason.INTERRUPTED
    assert stopped.iteration == 2
    assert [it.status for it in db.iterations(loop.id)] == ["ok", "interrupted"]

    final = run(db, db.get_loop(loop.id), config)
    assert final.status is LoopStatus.COMPLETED
    assert final.iteration == 3
    assert final.cost_usd == pytest.approx(0.2)
    assert final.tokens_input == 20
    assert [it.n for it in db.iterations(loop.id)] == [1, 2, 3]


def test_resume_after_a_crash_marks_the_unfinished_iteration_and_continues(db, workdir):
    loop, config = new_loop(db, workdir, [{"text": DONE}])
    crashed = db.save_loop(
        replace(
            loop,
            status=LoopStatus.RUNNING,
            iteration=1,
            cost_usd=0.5,
            started_at=datetime.now(UTC),
            runner_pid=999_999,
        )
    )
    db.begin_iteration(IterationRecord(loop_id=loop.id, n=1, started_at=datetime.now(UTC)))
    db.begin_iteration(IterationRecord(loop_id=loop.id, n=2, started_at=datetime.now(UTC)))
    observer = Recorder()
    final = run(db, crashed, config, observer=observer)
    assert final.status is LoopStatus.COMPLETED
    assert [(it.n, it.status) for it in db.iterations(loop.id)] == [
        (1, "interrupted"),
        (2, "interrupted"),
        (3, "ok"),
    ]
    assert final.cost_usd == pytest.approx(0.5)
    resumed = next(e for e in observer.events if e.event_type == "resumed")
    assert resumed.data["interrupted_iterations"] == [1, 2]


def test_each_iteration_records_its_agent_process(db, workdir):
    steps = [
        {"text": "one", "bash": ["echo $PPID > pid"]},
        {"text": DONE, "bash": ["echo $PPID >> pid"]},
    ]
    loop, config = new_loop(db, workdir, steps)

    run(db, loop, config)

    iterations = db.iterations(loop.id)
    assert [it.agent_pid for it in iterations] == [
        int(p) for p in (workdir / "pid").read_text().split()
    ]
    for it in iterations:
        assert it.agent_started_at is not None
        assert it.completed_at is not None
        assert it.started_at <= it.agent_started_at <= it.completed_at


def test_the_cooldown_runs_from_the_agents_exit_with_the_iterations_bookkeeping_in_it(
    db, workdir, monkeypatch
):
    loop, config = new_loop(db, workdir, [{"text": "one"}, {"text": DONE}], cooldown=1.0)
    record = LoopRunner._record

    async def slow_record(self: LoopRunner, *args: Any, **kwargs: Any) -> None:
        await asyncio.sleep(0.5)  # as a look or a checkpoint on a large repository can take
        await record(self, *args, **kwargs)

    monkeypatch.setattr(LoopRunner, "_record", slow_record)
    run(db, loop, config)

    assert_paused_from_exit_to_start(db.iterations(loop.id), 1.0)


def test_the_cooldown_after_a_new_loops_first_agent_runs_from_its_exit_not_the_stores_opening(
    tmp_path, workdir
):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "one"}, {"text": DONE}]}))
    config = LoopConfig(cooldown=1.0, checkpoint_interval=0, agent="scripted", script=str(script))
    loop = new_loop_record("Write the files.", workdir, config)
    adapter = adapter_for("scripted", options={"script": str(script)})
    url = str(tmp_path / "new.db")

    def slow_open() -> Store:
        time.sleep(0.5)  # as creating a new database can take
        return Store.open(url)

    asyncio.run(LoopRunner(slow_open, adapter, loop, config).run())

    assert_paused_from_exit_to_start(Store.open(url).iterations(loop.id), 1.0)


def assert_paused_from_exit_to_start(iterations: list[IterationRecord], cooldown: float) -> None:
    first, second = iterations
    assert first.agent_started_at is not None
    assert first.duration_ms is not None
    assert second.agent_started_at is not None
    exited = first.agent_started_at + timedelta(milliseconds=first.duration_ms)
    assert cooldown - 0.05 <= (second.agent_started_at - exited).total_seconds() < cooldown + 0.3


def test_a_new_loop_records_its_first_agent_though_the_store_opens_while_it_runs(tmp_path, workdir):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": DONE, "bash": ["echo $PPID > pid"]}]}))
    config = LoopConfig(cooldown=0, checkpoint_interval=0, agent="scripted", script=str(script))
    loop = new_loop_record("Write the files.", workdir, config)
    adapter = adapter_for("scripted", options={"script": str(script)})
    url = str(tmp_path / "new.db")

    final = asyncio.run(LoopRunner(lambda: Store.open(url), adapter, loop, config).run())

    assert final.status is LoopStatus.COMPLETED
    (iteration,) = Store.open(url).iterations(loop.id)
    assert iteration.agent_pid == int((workdir / "pid").read_text())


def test_a_new_loop_opens_its_store_once_its_first_agent_has_started(
    tmp_path, workdir, monkeypatch
):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": DONE}]}))
    config = LoopConfig(cooldown=0, checkpoint_interval=0, agent="scripted", script=str(script))
    loop = new_loop_record("Write the files.", workdir, config)
    adapter = adapter_for("scripted", options={"script": str(script)})
    order: list[str] = []
    spawn = process._spawn

    async def spawning(*args: Any) -> asyncio.SubprocessTransport:
        transport = await spawn(*args)
        order.append("agent started")
        return transport

    def open_store() -> Store:
        order.append("store opened")  # its imports and set-up would hold the spawn's GIL
        return Store.open(str(tmp_path / "new.db"))

    monkeypatch.setattr(process, "_spawn", spawning)
    asyncio.run(LoopRunner(open_store, adapter, loop, config).run())
    assert order == ["agent started", "store opened"]


@pytest.mark.parametrize(
    ("gate_passed", "iterations"), [(True, [1]), (False, [1, 2])], ids=["passed", "failed"]
)
def test_a_runner_that_died_ending_a_completed_loop_leaves_it_to_be_completed_not_rerun(
    db, workdir, gate_passed, iterations
):
    loop, config = new_loop(db, workdir, [{"text": DONE}])
    began = datetime.now(UTC)
    died = db.save_loop(
        replace(loop, status=LoopStatus.RUNNING, iteration=1, started_at=began, runner_pid=999_999)
    )
    declared = IterationRecord(loop_id=loop.id, n=1, started_at=began)
    db.begin_iteration(declared)
    gate = {"command": "make check", "passed": gate_passed, "exit_code": int(not gate_passed)}
    done = replace(declared, status="ok", completion_signal_found=True, gate_results=[gate])
    db.complete_iteration(done, died)

    final = run(db, died, config)

    assert (final.status, final.stop_reason) == (LoopStatus.COMPLETED, StopReason.COMPLETION)
    assert [it.n for it in db.iterations(loop.id)] == iterations
    assert len(db.events_of(loop.id, ["completed"])) == 1


def test_resume_after_a_crash_stops_the_agent_the_dead_runner_left(db, workdir, spawn):
    loop, config = new_loop(db, workdir, [{"text": DONE}])
    crashed = db.save_loop(
        replace(
            loop,
            status=LoopStatus.RUNNING,
            started_at=datetime.now(UTC),
            runner_pid=999_999,
            runner_host=socket.gethostname(),
        )
    )
    orphan, at = spawn("exec sleep 300", loop_id=loop.id)
    db.begin_iteration(
        IterationRecord(
            loop_id=loop.id,
            n=1,
            started_at=datetime.now(UTC),
            agent_pid=orphan.pid,
            agent_started_at=datetime.fromtimestamp(at, UTC),
        )
    )
    observer = Recorder()

    final = run(db, crashed, config, observer=observer)

    assert live(orphan.pid) == []
    assert final.status is LoopStatus.COMPLETED
    assert [(it.n, it.status) for it in db.iterations(loop.id)] == [(1, "interrupted"), (2, "ok")]
    assert observer.types()[:2] == ["resumed", "warning"]
    warning = observer.events[1].data
    assert warning["agents"] == [
        {"iteration": 1, "pid": orphan.pid, "outcome": "stopped", "detail": "stopped with SIGTERM"}
    ]
    assert f"the agent of iteration 1 (pid {orphan.pid}) was still running" in warning["message"]


def test_a_loop_with_spent_budgets_ends_without_running_the_agent(db, workdir):
    loop, config = new_loop(
        db, workdir, [{"text": "never", "edits": [{"path": "x", "content": ""}]}], max_iterations=2
    )
    spent = db.save_loop(replace(loop, status=LoopStatus.STOPPED, iteration=2))
    final = run(db, spent, config)
    assert final.stop_reason is StopReason.MAX_ITERATIONS
    assert not (workdir / "x").exists()


def test_a_missing_agent_fails_the_loop_as_agent_unavailable(db, workdir, monkeypatch):
    monkeypatch.setenv("RALPHCTL_CLAUDE_BIN", str(workdir / "no-such-claude"))
    loop, config = new_loop(db, workdir, [{"text": DONE}])
    config = replace(config, agent="claude")
    final = asyncio.run(LoopRunner(db, adapter_for("claude"), loop, config).run())
    assert final.status is LoopStatus.FAILED
    assert final.stop_reason is StopReason.AGENT_UNAVAILABLE
    assert final.stop_reason.exit_code == 3


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def test_checkpoints_are_committed_every_n_iterations_and_at_the_end(db, workdir):
    git(workdir, "init", "-q")
    git(workdir, "config", "user.name", "t")
    git(workdir, "config", "user.email", "t@example.invalid")
    git(workdir, "commit", "-q", "--allow-empty", "-m", "initial")
    steps = [
        {"text": f"step {n}", "edits": [{"path": f"f{n}.txt", "content": str(n)}]}
        for n in range(1, 5)
    ]
    steps.append({"text": DONE, "edits": [{"path": "f5.txt", "content": "5"}]})
    loop, config = new_loop(db, workdir, steps, checkpoint_interval=2)
    final = run(db, loop, config)
    assert final.iteration == 5
    subjects = git(workdir, "log", "--format=%s").splitlines()
    assert subjects == [
        "[ralph] Checkpoint iteration 5",
        "[ralph] Checkpoint iteration 4",
        "[ralph] Checkpoint iteration 2",
        "initial",
    ]
    stored = db.checkpoints(loop.id)
    assert [(c.iteration, c.commit_sha) for c in stored] == [
        (2, git(workdir, "rev-parse", "HEAD~2")),
        (4, git(workdir, "rev-parse", "HEAD~1")),
        (5, git(workdir, "rev-parse", "HEAD")),
    ]
    assert ".ralph" not in git(workdir, "ls-files")
    assert git(workdir, "status", "--porcelain") == ""
    # git commits while the store records the iteration: the checkpoint is recorded after it
    assert [c.snapshot["iteration"] for c in stored] == [2, 4, 5]
    order = [
        (event.event_type, event.data["iteration"])
        for event in db.events_since(0, loop.id)
        if event.event_type in ("iteration_completed", "checkpoint_created")
    ]
    assert order == [
        *[("iteration_completed", n) for n in (1, 2)],
        ("checkpoint_created", 2),
        *[("iteration_completed", n) for n in (3, 4)],
        ("checkpoint_created", 4),
        ("iteration_completed", 5),
        ("checkpoint_created", 5),
    ]


def test_outside_git_checkpoints_are_off_with_one_warning(db, workdir):
    loop, config = new_loop(db, workdir, [{"text": DONE}], checkpoint_interval=1)
    observer = Recorder()
    final = run(db, loop, config, observer=observer)
    assert final.status is LoopStatus.COMPLETED
    warnings = [e.data["message"] for e in observer.events if e.event_type == "warning"]
    assert sum("checkpoints are off" in message for message in warnings) == 1
