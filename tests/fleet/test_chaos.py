"""Chaos: three workers run 20 loops while a random one is killed with ``kill -9`` every few
seconds and restarted under its name. Every loop completes exactly once, its iterations are
numbered without a gap, its cost is the sum of its iterations', and its records match its
remote branch commit by commit: no checkpoint lost, none forked. ``make reliability``
(``RALPHCTL_RELIABILITY=long``) kills more often and for longer."""

from __future__ import annotations

import os
import random
import signal
import time
from typing import Any

import pytest

from ralphctl.store.repository import Store
from tests.fleet.test_worker_e2e import (
    Fleet,
    check_records_match_the_branch,
    fleet,
    statuses,
    wait_until,
)
from tests.reliability.scale import scaled

pytestmark = [pytest.mark.postgres, pytest.mark.reliability]

__all__ = ["fleet"]  # the fixture, shared with the end-to-end tests

LOOPS = 20
WORKERS = ("build-01", "build-02", "build-03")
KILLS = scaled(4, 15)
KILL_EVERY_S = 4.0
STEP: dict[str, Any] = {
    "edits": [{"path": "NOTES.md", "append": "- one more step\n"}],
    "cost_usd": 0.01,
    "sleep_s": 0.5,  # long enough for a kill to land mid-iteration
}
DONE = {**STEP, "text": "All done.\n<promise>COMPLETE</promise>"}


def test_loops_survive_workers_killed_at_random(fleet: Fleet) -> None:
    loop_ids = [fleet.start_loop(STEP, STEP, DONE) for _ in range(LOOPS)]
    for name in WORKERS:
        fleet.start_worker(name)

    chance = random.Random(int(os.environ.get("PYTEST_SEED", "13")))
    for _ in range(KILLS):
        time.sleep(KILL_EVERY_S)
        victim = chance.choice(WORKERS)
        os.kill(fleet.workers[victim].pid, signal.SIGKILL)
        fleet.workers[victim].wait()
        fleet.start_worker(victim)  # as systemd's Restart=always would
    wait_until(lambda: set(statuses(fleet.url, loop_ids).values()) == {"completed"}, fleet)

    interrupted = 0
    for loop_id in loop_ids:
        numbers = check_records_match_the_branch(fleet.url, fleet.remote, loop_id)
        assert numbers == list(range(1, len(numbers) + 1)), f"{loop_id}: a gap or a repeat"
        with Store.open(fleet.url) as store:
            loop = store.get_loop(loop_id)
            iterations = store.iterations(loop_id)
            completed = store.events_of(loop_id, ["completed"])
        assert len(completed) == 1, f"{loop_id} completed {len(completed)} times"
        assert iterations[-1].status == "ok"
        assert {it.status for it in iterations} <= {"ok", "interrupted"}
        interrupted += sum(it.status == "interrupted" for it in iterations)
        assert loop.iteration == numbers[-1]
        spent = sum(it.cost_usd or 0.0 for it in iterations)
        assert round(loop.cost_usd, 6) == round(spent, 6)
    assert interrupted >= 1, "the kills landed mid-iteration, and the loops went on"
