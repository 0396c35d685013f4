"""kill -9 of a manager running a hook-mode loop: the next manager stops the ``claude`` session
the dead one left running (the scripted stand-in, tests/hookmode/fake_claude.py) and records
what its interrupted iteration spent."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ralphctl.domain.states import LoopStatus
from ralphctl.engine.manager import LoopManager
from ralphctl.store.repository import Store
from ralphctl.store.transcript_chunks import iter_transcript
from tests.engine.victims import asleep, live, wait_for
from tests.manager.conftest import run
from tests.manager.test_crash import ROOT


async def restart(db: Store) -> None:
    """A new manager takes over what the killed one left, and shuts down."""
    manager = LoopManager(db)
    await manager.start()
    await manager.close()


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

    run(restart(db))
    assert live(claude) == []
    second = db.iterations(loop.id)[1]
    assert second.status == "interrupted"
    assert second.error_message is not None
    assert second.error_message.endswith(
        f"its agent (pid {claude}) was still running: stopped with SIGTERM"
    )
    assert db.get_loop(loop.id).status is not LoopStatus.RUNNING


def test_what_a_killed_manager_s_hook_mode_iteration_spent_is_recovered_by_the_next_one(
    db: Store, new_workdir, fake_claude
):
    fake_claude([{"text": "one"}, {"text": "two", "then_sleep_s": 60}])
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.manager.crash_child", db.url, "hook", str(new_workdir())],
        cwd=ROOT,
    )

    def second_answer_stored() -> bool:
        loops = db.list_loops()
        return bool(loops) and b'"two"' in b"".join(iter_transcript(db, loops[0].id, 2))

    try:
        wait_for(second_answer_stored, timeout=60)
    finally:
        child.kill()  # SIGKILL: the iteration's usage was never recorded
        child.wait()

    run(restart(db))

    (loop,) = db.list_loops()
    first, second = db.iterations(loop.id)
    assert (second.status, second.cost_source) == ("interrupted", "recovered")
    assert (second.tokens_input, second.tokens_output) == (1000, 1)  # its message, not the run's
    assert second.cost_usd is not None
    assert second.cost_usd > 0
    assert loop.cost_usd == pytest.approx((first.cost_usd or 0) + second.cost_usd)
    assert loop.tokens_input == first.tokens_input + second.tokens_input
