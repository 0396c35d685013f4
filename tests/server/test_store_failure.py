"""The database fails under a running loop. A foreign write lock on the SQLite file, held beyond
the busy timeout while the loop records an iteration: the server keeps answering
(``/api/health`` says the database is degraded), the failure is logged and recorded as an error
event once the lock is gone, and the loop resumes and completes (the iteration whose record
failed is marked interrupted). A database that keeps failing fails the loop, visibly."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ralphctl.engine import storefailure
from ralphctl.engine.manager import LoopManager
from ralphctl.server.app import create_app
from ralphctl.store.errors import StoreError
from ralphctl.store.repository import Store
from tests.reliability.figures import Figure
from tests.server.conftest import AUTH, DONE, TOKEN, loop_body, wait_until

BUSY_TIMEOUT_S = 5.0  # store/database.py
HELD_S = BUSY_TIMEOUT_S + 3.0
HEALTH_ANSWERS_WITHIN_S = 1.0
SLOW = {"text": "working slowly", "sleep_s": 2.0, "cost_usd": 0.01}
QUICK = {"text": "working", "cost_usd": 0.01}


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storefailure, "RETRY_DELAYS_S", (0.2, 0.5))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(str(tmp_path / "ralphctl.db")) as opened:
        yield opened


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    app = create_app(store, LoopManager(store), TOKEN)
    with TestClient(app, headers=AUTH) as test_client:
        yield test_client


@contextmanager
def write_locked(db: Path) -> Iterator[None]:
    """Another connection holds the database's write lock (as a backup tool or a stuck
    process would)."""
    foreign = sqlite3.connect(db, isolation_level=None)
    foreign.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        foreign.execute("ROLLBACK")
        foreign.close()


class HealthProbe:
    """Calls ``/api/health`` over and over in a thread; keeps the slowest answer and every
    ``database`` state seen."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.slowest_s = 0.0
        self.answers = 0
        self.states: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            body = self.client.get("/api/health").json()
            self.slowest_s = max(self.slowest_s, time.monotonic() - started)
            self.answers += 1
            self.states.add(body["database"])
            time.sleep(0.1)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.reliability
def test_a_foreign_write_lock_is_logged_recorded_and_the_loop_resumes_while_health_answers_at_once(
    client, tmp_path, new_workdir, caplog, figures
):
    caplog.set_level(logging.INFO, logger="ralphctl")
    body = loop_body(new_workdir(), QUICK, SLOW, DONE)
    loop_id = client.post("/api/loops", json=body).json()["id"]

    def iteration_2_runs() -> bool:
        return [it["status"] for it in client.get(f"/api/loops/{loop_id}/iterations").json()] == [
            "ok",
            "running",
        ]

    wait_until(iteration_2_runs, "iteration 2 to run")
    with HealthProbe(client) as probe, write_locked(tmp_path / "ralphctl.db"):
        wait_until(lambda: "degraded" in probe.states, "health to report the database degraded")
        time.sleep(HELD_S - BUSY_TIMEOUT_S)
    wait_until(lambda: client.get(f"/api/loops/{loop_id}").json()["status"] == "completed")

    iterations = client.get(f"/api/loops/{loop_id}/iterations").json()
    # the refused record of iteration 2 was kept in the loop's journal, recorded on resume
    assert [(it["n"], it["status"]) for it in iterations] == [(1, "ok"), (2, "ok"), (3, "ok")]
    spent = sum(it["cost_usd"] or 0.0 for it in iterations)
    assert client.get(f"/api/loops/{loop_id}").json()["cost_usd"] == pytest.approx(spent)
    events = client.get(f"/api/loops/{loop_id}/events").json()
    errors = [e["data"]["message"] for e in events if e["event_type"] == "error"]
    assert len(errors) == 1
    assert errors[0].startswith("the database failed: cannot record iteration 2")
    assert errors[0].endswith("the loop resumes once it takes writes again")
    assert "resumed" in [e["event_type"] for e in events]
    assert client.get("/api/health").json()["database"] == "ok"
    logged = [(r.levelname, r.getMessage()) for r in caplog.records]
    failure = f"loop {loop_id}: the database failed: cannot record iteration 2"
    assert any(level == "ERROR" and m.startswith(failure) for level, m in logged)
    assert ("INFO", f"loop {loop_id}: resumed after the database failure") in logged
    # Store calls run on the store's thread, never on the server's event loop: while they wait
    # out the busy timeout, health (read from memory) answers at once.
    note = f"worst latency: /api/health under an {HELD_S:.0f} s lock"
    figures(
        Figure("lock under serve", probe.answers, "health calls", 0, probe.slowest_s, note=note)
    )
    assert probe.slowest_s < HEALTH_ANSWERS_WITHIN_S


def test_a_loop_whose_database_keeps_failing_is_failed_visibly(
    client, store, new_workdir, caplog, monkeypatch
):
    def cannot_record(iteration, *_args, **_kwargs):
        raise StoreError(f"cannot record iteration {iteration.n}: disk I/O error")

    monkeypatch.setattr(store, "complete_iteration", cannot_record)
    caplog.set_level(logging.INFO, logger="ralphctl")
    loop_id = client.post("/api/loops", json=loop_body(new_workdir(), QUICK)).json()["id"]

    loop = wait_until(
        lambda: (got := client.get(f"/api/loops/{loop_id}").json())["status"] == "failed" and got,
        "the loop to fail",
    )

    assert loop["stop_reason"] == "store_failed"
    assert loop["stop_detail"] == (
        f"the database failed {storefailure.MAX_RECOVERIES} times in a row:"
        " cannot record iteration 3: disk I/O error"
    )
    events = client.get(f"/api/loops/{loop_id}/events").json()
    errors = [e["data"]["message"] for e in events if e["event_type"] == "error"]
    assert len(errors) == storefailure.MAX_RECOVERIES
    assert errors[-1].endswith("; the loop fails")
    assert events[-1]["event_type"] == "failed"
    iterations = client.get(f"/api/loops/{loop_id}/iterations").json()
    # each refused record was kept in the loop's journal and recorded by the next runner
    assert [it["status"] for it in iterations] == ["ok"] * storefailure.MAX_RECOVERIES
    logged = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("ERROR", f"loop {loop_id} failed (reason: store_failed, iteration: 3)") in logged
