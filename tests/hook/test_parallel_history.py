"""A hundred Stops at once with the default (queued) history: every one answered in time, the
counter exact, and the stored loop in the tracker's state once the one writer is done."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ralphctl.domain.states import LoopStatus
from ralphctl.hook import spool
from ralphctl.hook.arming import arm
from ralphctl.store.repository import Store
from tests.hook.helpers import HOOK_FILE, SESSION, fields_of, hook_env, stop_event
from tests.reliability.figures import Figure

STOPS = 100
DRAIN_S = 180.0


def one_stop(env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    """One Stop as the plugin runs it; its wall time in seconds."""
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(HOOK_FILE), "stop"],
        input=stop_event(stop_hook_active=True),
        env=env,
        capture_output=True,
        check=False,
        timeout=120,
    )
    return time.monotonic() - began, done


def writer_done(project: Path) -> bool:
    """Nothing queued, and no writer holds the project's writer lock."""
    if spool.queued(str(project)):
        return False
    lock = spool.claim_writer(str(project))
    if lock is None:
        return False
    os.close(lock)
    return not spool.queued(str(project))


@pytest.mark.reliability
def test_a_hundred_parallel_stops_are_answered_counted_and_stored(tmp_path, figures):
    project = tmp_path / "project"
    project.mkdir()
    db = str(tmp_path / "history.db")
    armed = Path(arm(str(project), "Count", session_id=SESSION, max_iterations=1000).path)
    env = hook_env(project, RALPHCTL_DB=db)
    del env["RALPHCTL_HOOK_STORE"]  # the default: queued for a detached writer

    with ThreadPoolExecutor(STOPS) as pool:
        results = list(pool.map(lambda _: one_stop(env), range(STOPS)))

    worst = max(seconds for seconds, _ in results)
    failed_open = [done.stderr.decode() for _, done in results if done.stderr]
    figures(Figure("parallel Stops", STOPS, "Stops", failures=len(failed_open), worst_s=worst))
    assert failed_open == []  # a lock wait past its timeout would say so here, and allow
    assert all(done.returncode == 0 for _, done in results)
    assert all(b'"decision": "block"' in done.stdout for _, done in results)
    assert fields_of(armed)["iteration"] == 1 + STOPS

    deadline = time.monotonic() + DRAIN_S
    while not writer_done(project):
        assert time.monotonic() < deadline, "the history writer did not finish"
        time.sleep(0.2)
    loop_id = str(fields_of(armed)["loop_id"])
    with Store.open(db) as store:
        loop = store.get_loop(loop_id)
        numbers = [it.n for it in store.iterations(loop_id)]
    assert (loop.status, loop.iteration) == (LoopStatus.RUNNING, STOPS)
    assert numbers == list(range(1, STOPS + 1))
