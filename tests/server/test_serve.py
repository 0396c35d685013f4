"""``ralphctl serve`` as a process: what it prints and logs, a busy port, SIGTERM and SIGINT
(a clean exit), a stale address file, and kill -9 with three loops mid-iteration (restarted, it
stops the agents left running and finishes all three; every iteration is recorded exactly
once)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ralphctl.server.client import Client
from ralphctl.server.locate import Address, read_address, read_token, server_dir, write_address
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
        process = subprocess.Popen(
            [*SERVE, "--db", db, "--log-file", str(tmp_path / "serve.log")],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
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


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_shuts_the_server_down_cleanly(serve, tmp_path, new_workdir, signum):
    process, client = serve()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "working", "sleep_s": 60}]}))
    body = {"task": "Do the work.", "workdir": str(new_workdir()), "agent": "scripted"}
    loop = client.post("/api/loops", body | {"script": str(script), "config": FAST})

    process.send_signal(signum)

    assert process.wait(timeout=60) == 0
    assert read_address(server_dir()) is None
    logged = (tmp_path / "serve.log").read_text()
    assert f"{signal.Signals(signum).name}: shutting down" in logged
    assert f"loop {loop['id']} suspended" in logged
    assert "server stopped" in logged


def test_a_stale_address_file_is_replaced_at_start(serve, tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    write_address(server_dir(), Address("http://127.0.0.1:1", dead.pid))

    process, client = serve()

    assert read_address(server_dir()) == Address(client.base_url, process.pid)
    logged = (tmp_path / "serve.log").read_text()
    assert f"replacing the address left by server pid {dead.pid}, no longer running" in logged


def test_an_unwritable_log_file_is_a_usage_error(tmp_path):
    result = subprocess.run(
        [*SERVE, "--db", str(tmp_path / "ralphctl.db"), "--log-file", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 2
    said = " ".join(result.stderr.split())  # rich wraps long lines
    assert f"cannot write the log file {tmp_path}: Is a directory" in said
    assert read_address(server_dir()) is None


def test_an_unknown_log_level_is_a_usage_error(tmp_path):
    result = subprocess.run(
        [*SERVE, "--db", str(tmp_path / "ralphctl.db"), "--log-level", "loud"],
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 2
    assert "'loud' is not one of" in " ".join(result.stderr.split())


def test_the_log_records_loop_lifecycle(serve, tmp_path, new_workdir):
    _, client = serve()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "done <promise>COMPLETE</promise>"}]}))
    body = {"task": "Do the work.", "workdir": str(new_workdir()), "agent": "scripted"}
    loop = client.post("/api/loops", body | {"script": str(script), "config": FAST})
    wait_until(lambda: client.get(f"/api/loops/{loop['id']}")["status"] == "completed")

    logged = wait_until(lambda: "completed" in (text := read(tmp_path)) and text)

    for what in ("created", "started", "completed"):
        assert f"INFO ralphctl.loops: loop {loop['id']} {what}" in logged


def read(tmp_path: Path) -> str:
    return (tmp_path / "serve.log").read_text()


def test_by_default_the_log_is_beside_the_token_when_the_server_dir_is_set_apart(tmp_path):
    process = subprocess.Popen(
        [*SERVE, "--db", str(tmp_path / "ralphctl.db")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: read_address(server_dir()) is not None, "the server to start")
    finally:
        process.terminate()
    assert process.wait(timeout=60) == 0

    logged = (server_dir() / "serve.log").read_text()
    assert "INFO ralphctl.serve: serving on http://127.0.0.1:" in logged
