"""N concurrent loops under one manager: iterations per second and manager RSS per loop.

Each loop runs ITERATIONS iterations of the minimal fake agent (the scripted agent, one step
that edits nothing and waits AGENT_WAIT_S, as a real agent waits on its model; cooldown 0, no
checkpoints) and ends on its iteration budget. All N are created at once and the manager runs
them all (``max_concurrent = N``). Each N runs in a fresh process, so that one size's memory
does not count in the next. On 2 cores the agents' start-up (a Python process each) is what
limits throughput; the manager's own share is its CPU time per iteration.

    at once        the most loops running at the same time (sampled)
    iterations/s   all iterations recorded / wall time from the first create to the last end
    manager CPU    the manager process's CPU time per iteration (the agents are other processes)
    RSS per loop   (peak VmRSS while the loops run - VmRSS before the first create) / N

Budget at N = 500 (printed, never asserted): <= 1 MB RSS per loop.

    .venv/bin/python bench/manager_scale.py [N ...]      # default: 50 200 500
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_SIZES = (50, 200, 500)
ITERATIONS = 3
AGENT_WAIT_S = 1.0
SAMPLE_S = 0.1
STEP = {
    "text": "nothing to do",
    "sleep_s": AGENT_WAIT_S,
    "cost_usd": 0.0001,
    "tokens": {"input": 10, "output": 1},
}


def rss_kib() -> int:
    """This process's resident set size (VmRSS), in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


async def measure(n: int, root: Path) -> dict[str, float]:
    from ralphctl.engine.manager import LoopManager
    from ralphctl.engine.starting import LoopRequest
    from ralphctl.store.repository import Store

    script = root / "script.json"
    script.write_text(json.dumps({"steps": [STEP]}))
    settings = {
        "max_iterations": ITERATIONS,
        "cooldown": 0,
        "checkpoint_interval": 0,
        "agent": "scripted",
        "script": str(script),
    }
    workdirs = [root / f"work-{i}" for i in range(n)]
    for workdir in workdirs:
        workdir.mkdir()
    store = Store.open(str(root / "ralphctl.db"))
    manager = LoopManager(store, max_concurrent=n, event_retention=None)
    await manager.start()
    peak = baseline = rss_kib()
    most = 0  # loops running at once

    async def sample() -> None:
        nonlocal peak, most
        while True:
            peak, most = max(peak, rss_kib()), max(most, len(manager.running_ids))
            await asyncio.sleep(SAMPLE_S)

    sampler = asyncio.create_task(sample())
    cpu, wall = time.process_time(), time.perf_counter()
    requests = [LoopRequest("benchmark", workdir, settings) for workdir in workdirs]
    await asyncio.gather(*(manager.create(request) for request in requests))
    while manager.running_ids:
        await asyncio.sleep(SAMPLE_S)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    sampler.cancel()
    await manager.close()
    iterations = manager.stats().all_time.iterations
    store.close()
    return {
        "n": n,
        "most_running": most,
        "iterations": iterations,
        "wall_s": wall,
        "iterations_per_s": iterations / wall,
        "manager_cpu_ms_per_iteration": 1000 * cpu / iterations,
        "baseline_rss_mib": baseline / 1024,
        "peak_rss_mib": peak / 1024,
        "rss_kib_per_loop": (peak - baseline) / n,
    }


def one(n: int) -> None:
    with tempfile.TemporaryDirectory(prefix="ralphctl-bench-") as tmp:
        print(json.dumps(asyncio.run(measure(n, Path(tmp)))))


def main(sizes: list[int]) -> None:
    print(
        f"{ITERATIONS} iterations per loop, the agent waiting {AGENT_WAIT_S:g} s in each;"
        " all loops created at once; one process per N"
    )
    print(
        f"{'N':>5} {'at once':>7} {'iterations':>10} {'wall s':>8} {'it/s':>7}"
        f" {'mgr CPU ms/it':>14} {'RSS before':>11} {'RSS peak':>9} {'RSS/loop':>10}"
    )
    for n in sizes:
        result = subprocess.run(
            [sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True
        )
        r = json.loads(result.stdout.strip().splitlines()[-1])
        print(
            f"{r['n']:>5} {r['most_running']:>7} {r['iterations']:>10} {r['wall_s']:>8.1f}"
            f" {r['iterations_per_s']:>7.1f} {r['manager_cpu_ms_per_iteration']:>14.1f}"
            f" {r['baseline_rss_mib']:>9.1f}MB {r['peak_rss_mib']:>7.1f}MB"
            f" {r['rss_kib_per_loop']:>7.0f} KiB"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        one(int(sys.argv[2]))
    else:
        main([int(arg) for arg in sys.argv[1:]] or list(DEFAULT_SIZES))
