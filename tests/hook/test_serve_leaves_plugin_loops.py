"""A loop armed with ``/ralph-loop`` in a session ralphctl did not launch has no runner to lose:
a manager starting (``ralphctl serve``) never takes it for an orphan, never stops it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from ralphctl.domain.states import LoopStatus
from ralphctl.engine.control import UnsupportedControl, check_resumable, plugin_loop
from ralphctl.engine.manager import LoopManager
from ralphctl.server.locate import read_address, server_dir
from ralphctl.store.repository import Store
from tests.hook.helpers import answer, arm_cli, fields_of, hook_env, run_hook, session_tracker
from tests.hook.helpers import stop_event as event

WAIT_S = 60.0


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "no-user-config.toml"))
    monkeypatch.setenv("RALPHCTL_SERVER_DIR", str(tmp_path / "server"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "ralphctl.db")


def stop(project: Path, db: str) -> str | None:
    """One Stop as Claude Code sends it, recorded in ``db`` before the hook exits."""
    env = hook_env(project, RALPHCTL_DB=db, RALPHCTL_HOOK_STORE="inline")
    return answer(run_hook(event(), env)).get("decision")


def armed_and_stopped_once(project: Path, db: str) -> str:
    """Arm as ``/ralph-loop`` does, then one Stop (blocked); returns the stored loop's id."""
    armed = arm_cli(project, "Fix the flaky test", "--max-iterations", "5")
    assert armed.returncode == 0, armed.stderr
    assert stop(project, db) == "block"
    loop_id = str(fields_of(session_tracker(project))["loop_id"])
    with Store.open(db) as store:
        loop = store.get_loop(loop_id)
    assert (loop.mode, loop.status, loop.iteration) == ("hook", LoopStatus.RUNNING, 1)
    assert plugin_loop(loop)
    return loop_id


def test_a_manager_starting_leaves_a_live_plugin_loop_running(project, db):
    loop_id = armed_and_stopped_once(project, db)

    async def start_and_close() -> None:
        with Store.open(db) as store:
            manager = LoopManager(store)
            await manager.start()
            await manager.close()

    asyncio.run(asyncio.wait_for(start_and_close(), WAIT_S))

    assert fields_of(session_tracker(project))["active"] is True
    assert stop(project, db) == "block"
    with Store.open(db) as store:
        loop = store.get_loop(loop_id)
        events = [e.event_type for e in store.events_since(0, loop_id)]
    assert (loop.status, loop.iteration) == (LoopStatus.RUNNING, 2)
    assert "stopped" not in events


def test_ralphctl_serve_starting_and_stopping_leaves_it_running(project, db, tmp_path):
    loop_id = armed_and_stopped_once(project, db)
    log = tmp_path / "serve.log"
    with log.open("w") as output:
        serve = subprocess.Popen(
            [sys.executable, "-m", "ralphctl", "serve", "--port", "0", "--db", db],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + WAIT_S
        while (address := read_address(server_dir())) is None or address.pid != serve.pid:
            assert serve.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
    finally:
        serve.terminate()
        serve.wait(timeout=WAIT_S)

    assert stop(project, db) == "block"
    with Store.open(db) as store:
        assert store.get_loop(loop_id).status is LoopStatus.RUNNING


def test_resuming_it_says_where_it_runs(project, db):
    loop_id = armed_and_stopped_once(project, db)
    with Store.open(db) as store:
        loop = store.get_loop(loop_id)
    with pytest.raises(UnsupportedControl, match="did not launch"):
        check_resumable(loop)


def test_a_hook_mode_loop_whose_runner_began_is_not_a_plugin_loop(project, db):
    loop_id = armed_and_stopped_once(project, db)
    with Store.open(db) as store:
        loop = store.get_loop(loop_id)
    assert not plugin_loop(replace(loop, runner_host="host", runner_pid=None))
    assert not plugin_loop(replace(loop, status=LoopStatus.PENDING))
    assert not plugin_loop(replace(loop, mode="fresh"))
