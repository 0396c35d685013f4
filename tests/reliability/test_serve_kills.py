"""kill -9 of ``ralphctl serve`` with five loops running, again and again (issue 10).

A real ``ralphctl serve`` process (its own SQLite file and server dir) runs five loops of the
scripted agent; it is killed with SIGKILL at random moments and started again each time, and
the last one takes every loop to its iteration limit. Then: each loop's iterations are
numbered 1..N with none missing or repeated, its totals (cost, tokens) are the sums of its
iterations, every loop has ended, and no agent of any loop still runs.
``scaled`` sets the number of kills (3 in `make test`, 10 in `make reliability`), and so the
number of iterations of each loop (twice as many).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ralphctl.server.client import Client
from ralphctl.server.locate import read_address
from ralphctl.store.repository import Store
from tests.engine.victims import of_loop
from tests.reliability.figures import Figure
from tests.reliability.scale import scaled
from tests.server.conftest import FAST, wait_until

KILLS = scaled(3, 10)
LOOPS = 5
ITERATIONS = 2 * KILLS  # so that every kill finds loops running
COST_USD = 0.1
STEP = {
    "text": "working",
    "sleep_s": 0.4,
    "cost_usd": COST_USD,
    "tokens": {"input": 1000, "output": 100},
}
SERVE = [sys.executable, "-m", "ralphctl", "serve", "--port", "0", "--log-level", "warning"]


class Servers:
    """``ralphctl serve`` processes, one after the other, on one database and server dir."""

    def __init__(self, tmp_path: Path) -> None:
        self.db = str(tmp_path / "ralphctl.db")
        self.directory = tmp_path / "server"
        self.log = tmp_path / "serve.log"
        self.env = {
            **os.environ,
            "RALPHCTL_SERVER_DIR": str(self.directory),
            "RALPHCTL_CONFIG": str(tmp_path / "no-user-config.toml"),
        }
        self.started: list[subprocess.Popen[bytes]] = []
        self.slowest_start_s = 0.0

    def start(self) -> Client:
        """A new server, once it answers."""
        began = time.monotonic()
        with (self.directory.parent / f"serve-{len(self.started)}.out").open("wb") as out:
            process = subprocess.Popen(
                [*SERVE, "--db", self.db, "--log-file", str(self.log)],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.started.append(process)

        def answering() -> Client | None:
            assert process.poll() is None, f"serve exited with {process.returncode}"
            address = read_address(self.directory)
            if address is None or address.pid != process.pid:
                return None
            return Client.discover(self.directory)

        client: Client = wait_until(answering, "the server to answer")
        self.slowest_start_s = max(self.slowest_start_s, time.monotonic() - began)
        return client

    def kill(self) -> None:
        """SIGKILL to the running server: no clean-up at all."""
        process = self.started[-1]
        process.send_signal(signal.SIGKILL)
        process.wait()

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    started = Servers(tmp_path)
    yield started
    started.close()


def start_loops(client: Client, tmp_path: Path) -> list[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [STEP]}))
    ids = []
    for n in range(LOOPS):
        workdir = tmp_path / f"work-{n}"
        workdir.mkdir()
        body = {"task": "Do the work.", "workdir": str(workdir), "agent": "scripted"}
        config = {**FAST, "max_iterations": ITERATIONS}
        ids.append(
            client.post("/api/loops", body | {"script": str(script), "config": config})["id"]
        )
    return ids


def ended(client: Client, ids: list[str]) -> Callable[[], bool]:
    def check() -> bool:
        return all(client.get(f"/api/loops/{i}")["status"] in ENDED for i in ids)

    return check


ENDED = ("completed", "stopped", "failed", "blocked")


@pytest.mark.timeout(900)
def test_serve_killed_with_five_loops_running_loses_and_repeats_no_iteration(
    servers: Servers, tmp_path: Path, figures: Callable[[Figure], None]
) -> None:
    rng = random.Random(int(os.environ.get("RALPHCTL_KILL_SEED", "10")))
    client = servers.start()
    ids = start_loops(client, tmp_path)
    began = time.monotonic()
    left_running = 0
    for _ in range(KILLS):
        time.sleep(rng.uniform(0.5, 2.0))
        servers.kill()
        left_running += sum(len(of_loop(i)) > 0 for i in ids)
        client = servers.start()
    wait_until(ended(client, ids), "every loop to end")
    seconds = time.monotonic() - began

    with Store.open(servers.db) as store:
        loops = [store.get_loop(i) for i in ids]
        iterations = {i: store.iterations(i) for i in ids}
    orphans = {i: of_loop(i) for i in ids}
    interrupted = sum(it.status == "interrupted" for its in iterations.values() for it in its)
    figures(
        Figure(
            "serve kill -9, 5 loops",
            KILLS,
            "kills",
            failures=sum(bool(pids) for pids in orphans.values()),
            worst_s=servers.slowest_start_s,
            note=f"{interrupted} iterations interrupted, {left_running} loops' agents outlived"
            f" the server; worst latency: a restart; {seconds:.0f} s in all",
        )
    )
    for loop in loops:
        numbers = [it.n for it in iterations[loop.id]]
        assert numbers == list(range(1, ITERATIONS + 1)), loop.id
        assert (loop.status, loop.iteration) == ("stopped", ITERATIONS)
        assert {it.status for it in iterations[loop.id]} <= {"ok", "interrupted"}
        assert loop.cost_usd == pytest.approx(sum(it.cost_usd or 0 for it in iterations[loop.id]))
        assert loop.tokens_input == sum(it.tokens_input for it in iterations[loop.id])
        assert loop.tokens_output == sum(it.tokens_output for it in iterations[loop.id])
    assert orphans == {i: [] for i in ids}
