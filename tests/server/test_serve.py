"""``ralphctl serve`` as a process: what it prints, a busy port, and kill -9 with three loops
mid-iteration (restarted, it stops the agents left running and finishes all three; every
iteration is recorded exactly once)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ralphctl.server.client import Client
from ralphctl.server.locate import read_address, read_token, server_dir
from tests.engine.victims import asleep_in, live
from tests.server.conftest import FAST, wait_until

SERVE = [sys.executable, "-m", "ralphctl", "serve", "--port", "0"]


def step(n: int, **extra):
    """Iteration ``n`` appends its number to ran.log first, so a rerun would show twice."""
    return {"text": f"step {n}", "edits": [{"path": "ran.log", "append": f"{n}\n"}], **extra}


STEPS = [
    step(1, cost_usd=0.1),
    step(2, bash=["echo $PPID > agent.pid"], sleep_s=60, cost_usd=5.0),  # killed mid-way
    step(3, cost_usd=0.1),
    step(4, text="done <promise>COMPLETE</promise>", cost_usd=0.1),
]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[], tuple[subprocess.Popen[bytes], Client]]]:
    """Starts ``ralphctl serve`` processes on one database; kills what is left at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start() -> tuple[subprocess.Popen[bytes], Client]:
        log = (tmp_path / f"serve-{len(started)}.log").open("w")
        db = str(tmp_path / "ralphctl.db")
        process = subprocess.Popen([*SERVE, "--db", db], stdout=log, stderr=subprocess.STDOUT)
        started.append(process)

        def ready() -> Client | None:
            assert process.poll() is None, Path(log.name).read_text()
            address = read_address(server_dir())
            if address is None or address.pid != process.pid:
                return None
            return Client.discover()

        return process, wait_until(ready, "the server to start")

    yield start
    for process in started:
        process.kill()
        process.wait()


def test_serve_prints_the_dashboard_url_with_the_token(serve, tmp_path):
    _, client = serve()

    printed = (tmp_path / "serve-0.log").read_text()

    assert f"dashboard: {client.base_url}/#token={read_token(server_dir())}" in printed
    assert client.base_url.startswith("http://127.0.0.1:")


def test_a_busy_port_is_a_usage_error(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*SERVE[:-1], str(port), "--db", str(tmp_path / "ralphctl.db")],
            capture_output=True,
            text=True,
            check=False,
        )

    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


def test_a_killed_server_loses_no_iteration_and_repeats_none(serve, tmp_path, new_workdir):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": STEPS}))
    workdirs = [new_workdir() for _ in range(3)]
    process, client = serve()
    loops = [
        client.post(
            "/api/loops",
            {"task": "Do the work.", "workdir": str(w), "agent": "scripted", "script": str(script)}
            | {"config": FAST},
        )
        for w in workdirs
    ]
    wait_until(lambda: all(asleep_in(w / "agent.pid") for w in workdirs), "iteration 2 to run")
    running = [client.get(f"/api/loops/{loop['id']}/iterations")[-1] for loop in loops]
    assert [(it["n"], it["status"]) for it in running] == [(2, "running")] * 3

    process.kill()  # SIGKILL: no clean-up at all
    process.wait()
    agents = [int((w / "agent.pid").read_text()) for w in workdirs]
    assert all(live(agent) for agent in agents)  # a crash leaves the agents running
    _, client = serve()
    assert [live(agent) for agent in agents] == [[]] * 3  # the new server stopped them first

    def all_completed() -> bool:
        return all(
            client.get(f"/api/loops/{loop['id']}")["status"] == "completed" for loop in loops
        )

    wait_until(all_completed, "every loop to complete after the restart")
    for loop in loops:
        iterations = client.get(f"/api/loops/{loop['id']}/iterations")
        assert [(it["n"], it["status"]) for it in iterations] == [
            (1, "ok"),
            (2, "interrupted"),
            (3, "ok"),
            (4, "ok"),
        ]
        assert client.get(f"/api/loops/{loop['id']}")["iteration"] == 4
        assert (Path(loop["workdir"]) / "ran.log").read_text() == "1\n2\n3\n4\n"
