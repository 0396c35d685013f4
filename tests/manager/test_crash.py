"""kill -9 of a manager with three loops mid-iteration: a new manager stops the agents the
dead one left running, finishes all three loops, and every iteration is recorded exactly
once."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ralphctl.domain.states import LoopStatus
from ralphctl.engine.manager import LoopManager
from tests.engine.victims import asleep_in, live
from tests.manager.conftest import run, until

ROOT = Path(__file__).parents[2]


def step(n: int, **extra):
    """Iteration ``n`` appends its number to ran.log first, so a rerun would show twice."""
    return {"text": f"step {n}", "edits": [{"path": "ran.log", "append": f"{n}\n"}], **extra}


STEPS = [
    step(1, cost_usd=0.1),
    step(2, bash=["echo $PPID > agent.pid"], sleep_s=60, cost_usd=5.0),  # killed mid-way
    step(3, cost_usd=0.1),
    step(4, text="done <promise>COMPLETE</promise>", cost_usd=0.1),
]


def wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the manager process"
        time.sleep(0.05)


def test_a_killed_manager_loses_no_iteration_and_repeats_none(db, tmp_path, new_workdir):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": STEPS}))
    workdirs = [new_workdir() for _ in range(3)]
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.manager.crash_child", db.url, str(script)]
        + [str(w) for w in workdirs],
        cwd=ROOT,
    )
    try:
        wait_for(lambda: all(asleep_in(w / "agent.pid") for w in workdirs))
        running = [db.iterations(loop.id)[-1] for loop in db.list_loops()]
        assert [(it.n, it.status) for it in running] == [(2, "running")] * 3
    finally:
        child.kill()  # SIGKILL: no clean-up at all
        child.wait()
    agents = [int((w / "agent.pid").read_text()) for w in workdirs]
    assert all(live(agent) for agent in agents)  # a crash leaves the agents running

    async def restart() -> None:
        manager = LoopManager(db)
        await manager.start()
        await until(lambda: not manager.running_ids and not manager.queued_ids)
        await manager.close()

    run(restart())
    assert [live(agent) for agent in agents] == [[]] * 3  # ... until the next manager starts
    loops = db.list_loops()
    assert len(loops) == 3
    for loop in loops:
        interrupted = db.iterations(loop.id)[1]
        assert interrupted.agent_pid in agents
        assert interrupted.error_message is not None
        assert interrupted.error_message.endswith("was still running: stopped with SIGTERM")
        assert (loop.status, loop.iteration) == (LoopStatus.COMPLETED, 4)
        iterations = db.iterations(loop.id)
        assert [(it.n, it.status) for it in iterations] == [
            (1, "ok"),
            (2, "interrupted"),
            (3, "ok"),
            (4, "ok"),
        ]
        assert (Path(loop.workdir) / "ran.log").read_text() == "1\n2\n3\n4\n"
        assert round(loop.cost_usd, 6) == 0.3
