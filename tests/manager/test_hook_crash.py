"""kill -9 of a manager running a hook-mode loop: the next manager stops the ``claude`` session
the dead one left running (the scripted stand-in, tests/hookmode/fake_claude.py)."""

from __future__ import annotations

import subprocess
import sys

from ralphctl.domain.states import LoopStatus
from ralphctl.engine.manager import LoopManager
from ralphctl.store.repository import Store
from tests.engine.victims import asleep, live, wait_for
from tests.manager.conftest import run
from tests.manager.test_crash import ROOT


def test_a_killed_manager_s_hook_mode_session_is_stopped_by_the_next_one(
    db: Store, new_workdir, fake_claude
):
    fake_claude([{"text": "one"}, {"text": "two", "sleep_s": 60}])
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.manager.crash_child", db.url, "hook", str(new_workdir())],
        cwd=ROOT,
    )

    def session_asleep() -> bool:
        loops = db.list_loops()
        iterations = db.iterations(loops[0].id) if loops else []
        if len(iterations) < 2 or iterations[1].agent_pid is None:
            return False
        return asleep(iterations[1].agent_pid)

    try:
        wait_for(session_asleep, timeout=60)
    finally:
        child.kill()  # SIGKILL: no clean-up at all
        child.wait()
    (loop,) = db.list_loops()
    first, second = db.iterations(loop.id)
    claude = second.agent_pid
    assert claude is not None
    assert first.agent_pid == claude  # one process, recorded when it started
    assert live(claude) == [claude]  # the session goes on without its runner

    async def restart() -> None:
        manager = LoopManager(db)
        await manager.start()
        await manager.close()

    run(restart())
    assert live(claude) == []
    second = db.iterations(loop.id)[1]
    assert second.status == "interrupted"
    assert second.error_message is not None
    assert second.error_message.endswith(
        f"its agent (pid {claude}) was still running: stopped with SIGTERM"
    )
    assert db.get_loop(loop.id).status is not LoopStatus.RUNNING
