"""A fleet on one machine: N queued loops of the scripted agent across 4 local workers.

A throwaway PostgreSQL (the test suite's, ``tests/pg.py``) is the backbone and a local bare
repository the team's remote. Each loop plays 3 steps of the scripted agent (an edit, a cost,
no wait; the third promises completion), so a checkpoint is committed and pushed per
iteration. Three phases:

    throughput     N loops queued at once, then the workers started: iterations/s from the
                   first iteration's start to the last one's end (the records' times)
    claim          PROBES loops queued one at a time on the idle fleet: queue -> the first
                   iteration's start (a worker took the job, held the lease, cloned, spawned)
    control        PROBES loops of slow steps (STEP_S each) for ``ralphctl loops pause ID
                   --db`` and as many for ``pause --now`` (in this process), once the loop
                   runs: request -> delivered (the holder logs ``<id>: pause requested``,
                   the time of its log line; with ``--now`` it then signals the agent) and
                   request -> the loop reads paused (a graceful pause waits for the
                   running iteration to end, by design)

Sampled every SAMPLE_S during the throughput phase: PostgreSQL connections per worker
(``pg_stat_activity`` by the worker's ``PGAPPNAME``, and its control connection,
``ralphctl control <worker>``; peak) and each worker process's VmRSS
(its agents are other processes) when it held the most loops: the largest RSS per loop held
of any worker, with that RSS and a worker's RSS once registered and idle.
Figures are printed, never asserted (the issue's targets: claim and control p99 <= 1 s).

    .venv/bin/python bench/fleet.py [--loops 1000] [--workers 4] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fleet.remotes import IDENTITY, make_remote  # noqa: E402
from tests.pg import create_schema, find_bin_dir, postgres_server  # noqa: E402

from ralphctl.cli.app import app  # noqa: E402
from ralphctl.engine.starting import LoopRequest  # noqa: E402
from ralphctl.fleet.backbone import open_fleet  # noqa: E402
from ralphctl.fleet.fleetloops import FleetLoop, store_fleet_loop  # noqa: E402
from ralphctl.fleet.queue import defer_loop, new_app  # noqa: E402
from ralphctl.fleet.submit import plan_fleet_loop  # noqa: E402
from ralphctl.store.repository import Store  # noqa: E402

PROBES = 20
SAMPLE_S = 0.5
STEP_S = 1.0
WAIT_S = 0.02
STEP: dict[str, Any] = {"edits": [{"path": "NOTES.md", "append": "- a step\n"}], "cost_usd": 0.01}
DONE = {**STEP, "text": "All done.\n<promise>COMPLETE</promise>"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    bin_dir = find_bin_dir()
    if bin_dir is None:
        sys.exit("no PostgreSQL server binaries: run scripts/ensure-postgres")
    with tempfile.TemporaryDirectory(prefix="ralphctl-bench-fleet-") as tmp:
        root = Path(tmp)
        os.environ["RALPHCTL_CONFIG"] = str(root / "none.toml")  # only the bench's settings
        with postgres_server(bin_dir) as server:
            bench = Bench(root, create_schema(server, "bench_fleet"), make_remote(root))
            with bench.workers(args.workers, args.concurrency):
                bench.report(args.loops, args.workers, args.concurrency)


def percentiles(values: list[float]) -> str:
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return f"p50 {cuts[49]:.3f} s, p99 {cuts[98]:.3f} s (n={len(values)})"


class Bench:
    def __init__(self, root: Path, url: str, remote: Path) -> None:
        self.root = root
        self.url = url
        self.remote = remote
        self.engine = open_fleet(url)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.scripts: dict[str, Path] = {}

    def script(self, name: str, steps: list[dict[str, Any]]) -> Path:
        if name not in self.scripts:
            path = self.root / f"{name}.json"
            path.write_text(json.dumps({"steps": steps}))
            self.scripts[name] = path
        return self.scripts[name]

    def queue(self, count: int, script: Path) -> list[tuple[str, float]]:
        """Store and queue ``count`` fleet loops; each id with the time it was queued."""
        request = LoopRequest(
            task="Do the work.",
            workdir=self.root,
            settings={"agent": "scripted", "script": str(script), "cooldown": 0},
        )
        plans = [plan_fleet_loop(request, str(self.remote), "main") for _ in range(count)]
        with self.engine.begin() as conn:
            for loop in plans:
                store_fleet_loop(conn, loop, FleetLoop(loop.id, str(self.remote), "main"))

        async def defer() -> list[tuple[str, float]]:
            app = new_app(self.url)
            queued = []
            async with app.open_async():
                for loop in plans:
                    await defer_loop(app, loop.id, [])
                    queued.append((loop.id, time.time()))
            return queued

        return asyncio.run(defer())

    @contextmanager
    def workers(self, count: int, concurrency: int) -> Iterator[None]:
        for number in range(1, count + 1):
            name = f"bench-{number:02d}"
            home = self.root / name
            home.mkdir()
            env = (
                os.environ
                | IDENTITY
                | {
                    "HOME": str(home),
                    "RALPHCTL_CONFIG": str(home / "none.toml"),
                    "PGAPPNAME": name,
                }
            )
            argv = [
                sys.executable, "-m", "ralphctl", "worker", "--db", self.url, "--name", name,
                "--concurrency", str(concurrency), "--cache", str(home / "cache"),
                "--heartbeat", "1s", "--lease-ttl", "6s", "--drain", "1s",
            ]  # fmt: skip
            with (home / "worker.log").open("wb") as log:
                self.processes[name] = subprocess.Popen(
                    argv, env=env, stdout=log, stderr=subprocess.STDOUT
                )
        try:
            yield
        finally:
            for process in self.processes.values():
                process.send_signal(signal.SIGTERM)
            for process in self.processes.values():
                process.wait(timeout=60)
            self.engine.dispose()

    def report(self, loops: int, workers: int, concurrency: int) -> None:
        print(f"fleet: {loops} loops x 3 iterations, {workers} workers x {concurrency} slots")
        self.wait(partial(self.registered, len(self.processes)), timeout=60)
        idle = max(rss_of(process.pid) for process in self.processes.values())
        rate, connections, (held, rss) = self.throughput(loops)
        print(f"  iterations/s            {rate:.2f}")
        print(f"  PG connections/worker   peak {connections}")
        mib = f"{rss / held / 2**20:.1f} MiB ({rss / 2**20:.1f} MiB holding {held} loops;"
        mib += f" idle {idle / 2**20:.1f} MiB)"
        print(f"  worker RSS/running loop {mib}")
        print(f"  claim (queue -> spawn)  {percentiles(self.claims())}")
        for now in (False, True):
            delivered, paused = self.controls(now=now)
            command = "pause --now" if now else "pause      "
            print(f"  {command} -> delivered {percentiles(delivered)}")
            print(f"  {command} -> paused    {percentiles(paused)}")

    def throughput(self, count: int) -> tuple[float, int, tuple[int, float]]:
        """Iterations per second, peak connections of a worker, and the (loops held, RSS) of
        the worker with the most RSS per loop held, at its fullest."""
        ids = [
            loop_id for loop_id, _ in self.queue(count, self.script("three", [STEP, STEP, DONE]))
        ]
        peaks: dict[str, float] = {"connections": 0}
        loaded: dict[str, tuple[int, float]] = {}  # worker: (loops held, RSS) at its fullest
        done = threading.Event()
        sampler = threading.Thread(target=self.sample, args=(peaks, loaded, done), daemon=True)
        sampler.start()
        self.wait(lambda: self.count_completed(ids) == len(ids), timeout=max(600.0, count * 2.0))
        done.set()
        sampler.join()
        with Store.open(self.url) as store:
            iterations = [it for loop_id in ids for it in store.iterations(loop_id)]
        first = min(it.started_at for it in iterations)
        last = max(it.completed_at or it.started_at for it in iterations)
        rate = len(iterations) / (last - first).total_seconds()
        heaviest = max(loaded.values(), key=lambda found: found[1] / found[0])
        return rate, int(peaks["connections"]), heaviest

    def claims(self) -> list[float]:
        script = self.script("three", [STEP, STEP, DONE])
        latencies = []
        for _ in range(PROBES):
            ((loop_id, queued),) = self.queue(1, script)
            started = self.wait(partial(self.first_start, loop_id), timeout=60)
            latencies.append(started - queued)
            self.wait(partial(self.count_completed, [loop_id]), timeout=60)
        return latencies

    def controls(self, *, now: bool) -> tuple[list[float], list[float]]:
        """Request -> delivered and request -> paused, of PROBES pauses (``now``: --now)."""
        slow = self.script("slow", [{**STEP, "sleep_s": STEP_S}])
        request = "pause_now" if now else "pause"
        delivered, paused = [], []
        for _ in range(PROBES):
            ((loop_id, _),) = self.queue(1, slow)
            self.wait(partial(self.first_start, loop_id), timeout=60)
            asked = time.time()
            argv = ["loops", "pause", loop_id, "--db", self.url, *(["--now"] if now else [])]
            done = CliRunner().invoke(app, argv)
            if done.exit_code != 0:
                raise RuntimeError(f"loops pause {loop_id}: {done.output}")
            paused.append(self.wait(partial(self.paused_at, loop_id), timeout=60) - asked)
            heard = self.wait(partial(self.heard_at, loop_id, request), timeout=10)
            delivered.append(heard - asked)
        return delivered, paused

    def heard_at(self, loop_id: str, request: str) -> float | None:
        """When a worker logged that it was asked ``request`` for the loop (its log's clock:
        this machine's)."""
        said = f"loop {loop_id}: {request} requested"
        for name in self.processes:
            for line in (self.root / name / "worker.log").read_text().splitlines():
                if said in line:
                    stamp = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
                    return stamp.timestamp()
        return None

    def first_start(self, loop_id: str) -> float | None:
        with Store.open(self.url) as store:
            iterations = store.iterations(loop_id)
        return iterations[0].started_at.timestamp() if iterations else None

    def registered(self, count: int) -> bool:
        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM workers").fetchone()
        return row is not None and row[0] == count

    def paused_at(self, loop_id: str) -> float | None:
        with Store.open(self.url) as store:
            paused = str(store.get_loop(loop_id).status) == "paused"
        return time.time() if paused else None

    def count_completed(self, ids: list[str]) -> int:
        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM loops WHERE status = 'completed' AND id = ANY(%s)", (ids,)
            ).fetchone()
        return int(row[0]) if row else 0

    def sample(
        self, peaks: dict[str, float], loaded: dict[str, tuple[int, float]], done: threading.Event
    ) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not done.wait(SAMPLE_S):
                rows = conn.execute(
                    "SELECT regexp_replace(application_name, '^ralphctl control ', ''),"
                    " count(*) FROM pg_stat_activity WHERE application_name LIKE 'bench-%'"
                    " OR application_name LIKE 'ralphctl control bench-%' GROUP BY 1"
                ).fetchall()
                held: dict[str, int] = dict(
                    conn.execute(
                        "SELECT worker, count(*) FROM loop_leases"
                        " WHERE worker IS NOT NULL AND expires_at > now() GROUP BY 1"
                    ).fetchall()
                )
                peaks["connections"] = max([peaks["connections"], *(n for _, n in rows)])
                for name, process in self.processes.items():
                    if held.get(name):
                        now = (int(held[name]), rss_of(process.pid))
                        loaded[name] = max(loaded.get(name, now), now)

    def wait(self, condition: Any, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while not (found := condition()):
            if time.monotonic() > deadline:
                logs = {name: (self.root / name / "worker.log").read_text()[-2000:]
                        for name in self.processes}  # fmt: skip
                raise TimeoutError(f"the fleet did not get there; worker logs: {logs}")
            time.sleep(WAIT_S)
        return found


def rss_of(pid: int) -> float:
    """A process's resident memory in bytes (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return float(line.split()[1]) * 1024
    return 0.0


if __name__ == "__main__":
    main()
