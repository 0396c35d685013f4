"""Pause, resume and stop of fleet loops from any machine's CLI (`loops … --db postgresql://`):
the request is kept on the loop's lease and reaches the worker that holds the loop through
PostgreSQL's LISTEN/NOTIFY, a loop no worker holds is settled in the database, and a resume
queues the loop again for a worker; a request sent while the worker's control connection is
cut reaches it all the same.

Worker processes with homes and caches of their own, the scripted agent, a bare repository as
the remote. How long a request took to reach the worker is printed, not asserted (the figures
belong to bench/): the test asserts that it arrived.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from ralphctl.domain.conditions import ExternalSignal
from ralphctl.engine.eventfeed import libpq_url
from ralphctl.fleet.control import control_fleet_loop
from ralphctl.store.repository import Store
from ralphctl.store.url import resolve_url
from tests.fleet.test_worker_e2e import (
    DONE,
    STEP,
    Fleet,
    running_iteration,
    statuses,
    wait_until,
)

pytestmark = pytest.mark.postgres

SLOW = {**STEP, "sleep_s": 30}


@pytest.fixture
def fleet(tmp_path: Path, postgres_url: str, fleet_engine: object, remote: Path) -> Iterator[Fleet]:
    started = Fleet(tmp_path, postgres_url, remote)
    yield started
    started.stop()


def reached(condition: Callable[[], bool], fleet: Fleet, what: str, asked: float) -> None:
    """Wait for ``condition`` and print how long it took since ``asked`` (a CLI's start-up
    included)."""
    wait_until(condition, fleet)
    print(f"{what}: {time.monotonic() - asked:.3f} s after the CLI was started")


def status_of(fleet: Fleet, loop_id: str) -> str:
    return statuses(fleet.url, [loop_id])[loop_id]


def iteration_statuses(url: str, loop_id: str) -> list[str]:
    with Store.open(url) as store:
        return [it.status for it in store.iterations(loop_id)]


def held_loops(fleet: Fleet) -> list[str]:
    return [loop for worker in fleet.ralphctl("workers", "ls") for loop in worker["loops"]]


def test_a_pause_now_reaches_the_worker_and_a_resume_queues_the_loop_for_one(fleet: Fleet):
    loop_id = fleet.start_loop(STEP, SLOW, STEP, DONE)
    fleet.start_worker("build-01", concurrency=1)
    wait_until(lambda: running_iteration(fleet.url, loop_id) == 2, fleet)

    asked = time.monotonic()
    answer = fleet.ralphctl("loops", "pause", "--now", loop_id)
    reached(lambda: status_of(fleet, loop_id) == "paused", fleet, "pause --now: paused", asked)

    assert answer["status"] == "running"  # the worker was asked; it recorded the pause
    assert iteration_statuses(fleet.url, loop_id) == ["ok", "interrupted"]
    wait_until(lambda: not held_loops(fleet), fleet)  # the lease is released

    resumed = fleet.ralphctl("loops", "resume", loop_id)
    assert resumed["status"] == "running"
    wait_until(lambda: status_of(fleet, loop_id) == "completed", fleet)
    assert iteration_statuses(fleet.url, loop_id) == ["ok", "interrupted", "ok", "ok"]


def test_a_pause_reaches_the_worker_at_once_and_takes_effect_after_the_iteration(fleet: Fleet):
    loop_id = fleet.start_loop(STEP, {**STEP, "sleep_s": 4}, DONE)
    fleet.start_worker("build-01", concurrency=1)
    wait_until(lambda: running_iteration(fleet.url, loop_id) == 2, fleet)

    asked = time.monotonic()
    fleet.ralphctl("loops", "pause", loop_id)
    reached(
        lambda: "pause requested" in fleet.log("build-01"), fleet, "pause: at the worker", asked
    )
    wait_until(lambda: status_of(fleet, loop_id) == "paused", fleet)

    assert iteration_statuses(fleet.url, loop_id) == ["ok", "ok"]  # the iteration finished


def test_a_stop_reaches_the_worker_and_interrupts_the_running_iteration(fleet: Fleet):
    loop_id = fleet.start_loop(STEP, SLOW, DONE)
    fleet.start_worker("build-01", concurrency=1)
    wait_until(lambda: running_iteration(fleet.url, loop_id) == 2, fleet)

    asked = time.monotonic()
    fleet.ralphctl("loops", "stop", loop_id)
    reached(lambda: status_of(fleet, loop_id) == "stopped", fleet, "stop: stopped", asked)

    with Store.open(fleet.url) as store:
        loop = store.get_loop(loop_id)
        assert [it.status for it in store.iterations(loop_id)] == ["ok", "interrupted"]
    assert str(loop.stop_reason) == "user_stop"
    wait_until(lambda: not held_loops(fleet), fleet)
    assert fleet.workers["build-01"].poll() is None, "the worker goes on serving"


def test_a_loop_no_worker_holds_is_settled_in_the_database_and_queued_again(fleet: Fleet):
    loop_id = fleet.start_loop(STEP, DONE)  # no worker runs yet: it stays pending

    stopped = fleet.ralphctl("loops", "stop", loop_id)
    assert stopped["status"] == "stopped"
    resumed = fleet.ralphctl("loops", "resume", loop_id)
    assert resumed["status"] == "running"

    fleet.start_worker("build-01", concurrency=1)
    wait_until(lambda: status_of(fleet, loop_id) == "completed", fleet)
    assert iteration_statuses(fleet.url, loop_id) == ["ok", "ok"]


def control_connections(url: str, worker: str, *, terminate: bool = False) -> int:
    """How many sessions listen for ``worker``'s requests (``terminate``: cut them first)."""
    name = f"ralphctl control {worker}"
    with psycopg.connect(libpq_url(resolve_url(url)), autocommit=True) as conn:
        if terminate:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = %s",
                (name,),
            )
        found = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
        ).fetchone()
    assert found is not None
    return int(found[0])


def test_a_request_sent_while_the_control_connection_is_cut_is_not_lost(fleet: Fleet):
    loop_id = fleet.start_loop(STEP, SLOW, DONE)
    fleet.start_worker("build-01", concurrency=1)
    wait_until(lambda: running_iteration(fleet.url, loop_id) == 2, fleet)
    assert control_connections(fleet.url, "build-01") == 1  # one per worker, not per loop

    control_connections(fleet.url, "build-01", terminate=True)
    with Store.open(fleet.url) as store:  # at once: the worker is not listening yet
        control_fleet_loop(store, loop_id, ExternalSignal.PAUSE, now=True)

    wait_until(lambda: status_of(fleet, loop_id) == "paused", fleet)
    assert iteration_statuses(fleet.url, loop_id) == ["ok", "interrupted"]
    wait_until(lambda: "listening for control requests again" in fleet.log("build-01"), fleet)
