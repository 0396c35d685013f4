"""`ralphctl serve --db postgresql://…` over a fleet: it leaves fleet loops to the workers
(no orphan reconciling, no pending fleet loop started here), lists them with their worker,
repository and branch, streams every worker's events to its WebSocket clients, and its API's
pause, resume and stop reach the worker holding the loop.

A `serve` process and worker processes on the suite's PostgreSQL, the scripted agent, a bare
repository as the remote.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from ralphctl.server.client import Client
from ralphctl.server.locate import read_address, read_token
from ralphctl.store.repository import Store
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


class Server:
    """A `ralphctl serve` process on the fleet's database, and a client of its API."""

    def __init__(self, fleet: Fleet) -> None:
        self.dir = fleet.root / "server"
        home = fleet.root / "server-home"
        env = fleet.env(home) | {"RALPHCTL_SERVER_DIR": str(self.dir)}
        argv = [sys.executable, "-m", "ralphctl", "serve", "--port", "0", "--db", fleet.url]
        self.log = home / "serve.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [*argv, "--log-file", str(home / "server.log")],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_until(self._started, fleet)
        client = Client.discover(self.dir)
        assert client is not None
        self.api = client
        self.token = read_token(self.dir)

    def _started(self) -> bool:
        assert self.process.poll() is None, self.log.read_text()
        address = read_address(self.dir)
        return address is not None and address.pid == self.process.pid

    def websocket_url(self) -> str:
        return f"{self.api.base_url.replace('http', 'ws', 1)}/ws/events?token={self.token}"

    def stop(self) -> None:
        """SIGTERM: a clean exit (its event feed closed with the manager)."""
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        assert code == 0, self.log.read_text()[-3000:]


@pytest.fixture
def fleet(tmp_path: Path, postgres_url: str, fleet_engine: object, remote: Path) -> Iterator[Fleet]:
    started = Fleet(tmp_path, postgres_url, remote)
    yield started
    started.stop()


@pytest.fixture
def start_server(fleet: Fleet) -> Iterator[Callable[[], Server]]:
    """Starts `serve` processes on the fleet's database; stops them at the end."""
    servers: list[Server] = []

    def start() -> Server:
        servers.append(Server(fleet))
        return servers[-1]

    yield start
    for started in servers:
        started.stop()


def event_count(url: str, loop_ids: list[str]) -> dict[str, int]:
    with Store.open(url) as store:
        return {loop_id: len(store.events_since(0, loop_id)) for loop_id in loop_ids}


def test_serve_leaves_fleet_loops_to_the_workers_and_streams_their_events(
    fleet: Fleet, start_server: Callable[[], Server]
) -> None:
    waiting = fleet.start_loop(STEP, DONE, labels=("gpu",))  # no worker has gpu: pending
    orphan = fleet.start_loop(STEP, SLOW, DONE)
    fleet.start_worker("build-01", concurrency=1)
    wait_until(lambda: running_iteration(fleet.url, orphan) == 2, fleet)
    os.kill(fleet.workers["build-01"].pid, signal.SIGKILL)  # its loop is left running
    before = event_count(fleet.url, [waiting, orphan])

    serve = start_server()
    listed = {loop["id"]: loop for loop in serve.api.get("/api/loops")}

    assert listed[waiting]["status"] == "pending"
    assert listed[waiting]["fleet"] == {
        "repo": str(fleet.remote),
        "branch": "main",
        "loop_branch": f"ralph/{waiting}",
        "labels": ["gpu"],
        "worker": None,
        "waiting_for": "waiting for a worker with label gpu",  # as `loops ls` says
    }
    assert listed[orphan]["status"] == "running"
    assert event_count(fleet.url, [waiting, orphan]) == before, "serve recorded nothing"
    assert running_iteration(fleet.url, orphan) == 2, "nor marked the iteration interrupted"

    with connect(serve.websocket_url()) as socket:
        snapshot = json.loads(socket.recv(timeout=30))
        assert {waiting, orphan} <= {loop["id"] for loop in snapshot["data"]["loops"]}
        fleet.start_worker("build-02", concurrency=1)
        seen: list[dict[str, Any]] = []
        holder = None
        while not any(e["event_type"] == "completed" and e["loop_id"] == orphan for e in seen):
            seen.append(json.loads(socket.recv(timeout=120)))
            if seen[-1]["event_type"] == "iteration_started":
                holder = serve.api.get(f"/api/loops/{orphan}")["fleet"]["worker"]

    of_orphan = [event["event_type"] for event in seen if event["loop_id"] == orphan]
    assert "resumed" in of_orphan, of_orphan
    assert "iteration_completed" in of_orphan
    seqs = [event["seq"] for event in seen]
    assert seqs == sorted(set(seqs)), "one global sequence, each event once, in order"
    assert holder == "build-02"
    assert statuses(fleet.url, [waiting])[waiting] == "pending"


def test_pause_resume_and_stop_through_a_servers_api_reach_the_worker(
    fleet: Fleet, start_server: Callable[[], Server]
) -> None:
    loop_id = fleet.start_loop(STEP, SLOW, STEP, SLOW, DONE)
    fleet.start_worker("build-01", concurrency=1)
    serve = start_server()
    wait_until(lambda: running_iteration(fleet.url, loop_id) == 2, fleet)

    asked = time.monotonic()
    assert serve.api.post(f"/api/loops/{loop_id}/pause", now=True)["status"] == "running"
    wait_until(lambda: statuses(fleet.url, [loop_id])[loop_id] == "paused", fleet)
    print(f"API pause now: paused {time.monotonic() - asked:.3f} s after the request")

    assert serve.api.post(f"/api/loops/{loop_id}/resume")["status"] == "running"
    wait_until(lambda: running_iteration(fleet.url, loop_id) == 4, fleet)
    asked = time.monotonic()
    serve.api.post(f"/api/loops/{loop_id}/stop")
    wait_until(lambda: statuses(fleet.url, [loop_id])[loop_id] == "stopped", fleet)
    print(f"API stop: stopped {time.monotonic() - asked:.3f} s after the request")

    with Store.open(fleet.url) as store:
        assert [it.status for it in store.iterations(loop_id)] == [
            "ok",
            "interrupted",
            "ok",
            "interrupted",
        ]
