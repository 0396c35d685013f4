"""Iterations a dead runner left running: their agents stopped, then marked interrupted."""

from __future__ import annotations

import subprocess
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from ralphctl.domain.states import LoopStatus
from ralphctl.engine.leftovers import AgentFate, Leftovers, interrupt_leftovers
from ralphctl.store.records import IterationRecord, LoopRecord
from ralphctl.store.repository import INTERRUPTED_MESSAGE, Store
from tests.engine.victims import Spawn, live

pytestmark = pytest.mark.timeout(60)


def crashed(db: Store, runner_host: str | None = None) -> LoopRecord:
    """A running loop whose runner died (on this host unless told otherwise)."""
    return db.create_loop(
        LoopRecord(
            id=uuid.uuid4().hex[:12],
            name="crashed",
            mode="fresh",
            agent="scripted",
            workdir="/nonexistent",
            task="t",
            config={},
            status=LoopStatus.RUNNING,
            created_at=datetime.now(UTC),
            runner_host=runner_host,
        )
    )


def left_running(db: Store, loop: LoopRecord, n: int, agent: int | None, at: float = 0) -> None:
    started = datetime.now(UTC)
    iteration = IterationRecord(loop_id=loop.id, n=n, started_at=started)
    if agent is not None:
        iteration = replace(
            iteration, agent_pid=agent, agent_started_at=datetime.fromtimestamp(at, UTC)
        )
    db.begin_iteration(iteration)


def test_an_agent_still_running_is_stopped_and_its_iteration_says_so(db, spawn: Spawn):
    loop = crashed(db)
    agent, at = spawn("exec sleep 300", loop_id=loop.id)
    left_running(db, loop, 2, agent.pid, at)

    found = interrupt_leftovers(db, [loop])[loop.id]

    said = "was still running: stopped with SIGTERM"
    assert found == Leftovers(
        [2], [AgentFate(2, agent.pid, "stopped", "stopped with SIGTERM", said)]
    )
    assert live(agent.pid) == []
    (iteration,) = db.iterations(loop.id)
    assert iteration.status == "interrupted"
    assert iteration.error_message == f"{INTERRUPTED_MESSAGE}; its agent (pid {agent.pid}) {said}"
    assert found.message() == (
        "iteration 2 was left running by a runner that died: interrupted; "
        f"the agent of iteration 2 (pid {agent.pid}) {said}"
    )
    assert found.agents[0].data() == {
        "iteration": 2,
        "pid": agent.pid,
        "outcome": "stopped",
        "detail": "stopped with SIGTERM",
    }


def test_the_agents_of_several_loops_are_stopped_and_each_loop_gets_its_own(db, spawn: Spawn):
    first, second, quiet = crashed(db), crashed(db), crashed(db)
    one, one_at = spawn("exec sleep 300", loop_id=first.id)
    two, two_at = spawn("exec sleep 300", loop_id=second.id)
    left_running(db, first, 1, one.pid, one_at)
    left_running(db, second, 3, two.pid, two_at)
    left_running(db, second, 4, None)  # begun before 0003: no agent recorded

    found = interrupt_leftovers(db, [first, second, quiet])

    assert [(f.interrupted, [a.pid for a in f.agents]) for f in found.values()] == [
        ([1], [one.pid]),
        ([3, 4], [two.pid]),
        ([], []),
    ]
    assert live(one.pid) == live(two.pid) == []
    assert [it.error_message for it in db.iterations(second.id)] == [
        f"{INTERRUPTED_MESSAGE}; its agent (pid {two.pid}) was still running: stopped with SIGTERM",
        INTERRUPTED_MESSAGE,
    ]
    assert found[quiet.id].message() == ""


def test_an_agent_that_ran_on_another_host_is_left_alone(db, spawn: Spawn):
    loop = crashed(db, runner_host="elsewhere.example")
    agent, at = spawn("exec sleep 300", loop_id=loop.id)
    left_running(db, loop, 1, agent.pid, at)

    found = interrupt_leftovers(db, [loop])[loop.id]

    assert [(a.outcome, a.said) for a in found.agents] == [
        ("left_alone", "was left alone: it ran on elsewhere.example, not here")
    ]
    assert live(agent.pid) == [agent.pid]
    assert found.interrupted == [1]


def test_an_agent_that_already_exited_is_noted(db):
    loop = crashed(db)
    at = time.time()
    dead = subprocess.Popen(["true"], start_new_session=True)
    dead.wait()
    left_running(db, loop, 1, dead.pid, at)

    found = interrupt_leftovers(db, [loop])[loop.id]

    assert [(a.outcome, a.said) for a in found.agents] == [("gone", "had already exited")]
    assert db.iterations(loop.id)[0].error_message == (
        f"{INTERRUPTED_MESSAGE}; its agent (pid {dead.pid}) had already exited"
    )
