"""Hook-mode loops run by `ralphctl serve` (the loop manager), started and controlled with
`ralphctl loops`, driving the REAL Claude Code CLI against the mock Messages API."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ralphctl.server.client import Client
from ralphctl.server.locate import read_address
from tests.mockapi import RecordedRequest, Reply, expected_cost
from tests.mockapi.turns import Answer
from tests.realcli.harness import RealClaude

pytestmark = pytest.mark.real_cli

TASK = "Write the notes."
WAIT_S = 120.0

Cli = Callable[..., subprocess.CompletedProcess[str]]


def wait_for(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (result := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return result


@pytest.fixture
def served(real_claude: RealClaude) -> Iterator[tuple[Client, Cli]]:
    """A `ralphctl serve` process in the real CLI's hermetic environment, its API client,
    and a function running `ralphctl ARGS…` against it."""
    server_dir = real_claude.home / "server"
    env = {
        **real_claude.env,
        "RALPHCTL_DB": str(real_claude.home / "ralphctl.db"),
        "RALPHCTL_CONFIG": "/nonexistent.toml",
        "RALPHCTL_SERVER_DIR": str(server_dir),
    }
    log = real_claude.home / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "ralphctl", "serve", "--port", "0"],
            env=env,
            cwd=real_claude.project,
            stdout=out,
            stderr=subprocess.STDOUT,
        )

    def ready() -> Client | None:
        assert process.poll() is None, log.read_text()
        address = read_address(server_dir)
        return Client.discover(server_dir) if address and address.pid == process.pid else None

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ralphctl", *args],
            env=env,
            cwd=real_claude.project,
            capture_output=True,
            text=True,
            timeout=WAIT_S,
            check=False,
        )

    try:
        yield wait_for(ready, "the server to start"), cli
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def start_hook_loop(cli: Cli, *extra: str) -> dict[str, Any]:
    started = cli("loops", "start", "--mode", "hook", "--task", TASK, "--json", *extra)
    assert started.returncode == 0, started.stderr
    loop: dict[str, Any] = json.loads(started.stdout)
    return loop


def ended(client: Client, loop_id: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        loop: dict[str, Any] = client.get(f"/api/loops/{loop_id}")
        return None if loop["status"] in ("pending", "running") else loop

    result: dict[str, Any] = wait_for(done, f"loop {loop_id} to end")
    return result


def iterations(client: Client, loop_id: str) -> list[tuple[int, str, str]]:
    found = client.get(f"/api/loops/{loop_id}/iterations")
    return [(it["n"], it["status"], it["output_summary"]) for it in found]


def test_the_server_runs_a_hook_mode_session_until_its_bound(real_claude, served):
    client, cli = served
    turns = [Reply(f"Still working ({n}).") for n in range(1, 4)]
    real_claude.server.set_script(*turns)

    created = start_hook_loop(cli, "--max-iterations", "3")
    loop = ended(client, created["id"])

    assert (created["mode"], created["status"]) == ("hook", "running")
    assert (loop["status"], loop["stop_reason"]) == ("stopped", "max_iterations")
    assert iterations(client, loop["id"]) == [
        (1, "ok", "Still working (1)."),
        (2, "ok", "Still working (2)."),
        (3, "ok", "Still working (3)."),
    ]
    assert loop["cost_usd"] == pytest.approx(expected_cost(turns))
    assert len(real_claude.server.main_requests) == 3  # one session: three turns, no restart
    events = [e["event_type"] for e in client.get(f"/api/loops/{loop['id']}/events")]
    assert events[:2] == ["created", "started"]
    assert events[-1] == "stopped"


def test_a_served_hook_mode_loop_pauses_resumes_its_session_and_stops(real_claude, served):
    client, cli = served
    second, third, release = threading.Event(), threading.Event(), threading.Event()

    def slow(request: RecordedRequest) -> Answer:
        second.set()
        release.wait(WAIT_S)
        return Reply("Second.")

    def stuck(request: RecordedRequest) -> Answer:
        third.set()
        release.wait(WAIT_S)
        return Reply("too late")

    real_claude.server.set_script(Reply("Started."), slow, stuck)
    try:
        loop_id = start_hook_loop(cli, "--max-iterations", "5")["id"]
        assert second.wait(WAIT_S), "the second iteration never asked the API"
        paused = cli("loops", "pause", loop_id)
        release.set()  # the second turn ends: its Stop pauses the loop
        loop = ended(client, loop_id)
        release.clear()
        resumed = cli("loops", "resume", loop_id)
        assert third.wait(WAIT_S), "the resumed session never asked the API"
        stopped = cli("loops", "stop", loop_id)
        final = ended(client, loop_id)
        again = cli("loops", "resume", loop_id)
    finally:
        release.set()

    assert paused.returncode == 0, paused.stderr
    assert (loop["status"], loop["iteration"]) == ("paused", 2)
    assert resumed.returncode == 0, resumed.stderr
    assert stopped.returncode == 0, stopped.stderr
    assert (final["status"], final["stop_reason"]) == ("stopped", "user_stop")
    assert [(n, status) for n, status, _ in iterations(client, loop_id)] == [
        (1, "ok"),
        (2, "ok"),
        (3, "interrupted"),
    ]
    assert len(real_claude.server.main_requests) == 3  # one session, continued with --resume
    assert again.returncode == 2
    assert "cannot be entered again" in again.stderr
    state = json.loads((Path(real_claude.project) / ".ralph" / "state.json").read_text())
    assert (state["status"], state["stopReason"]) == ("stopped", "user_stop")
