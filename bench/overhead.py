"""Per-iteration orchestration overhead of `ralphctl run`, against a bare shell loop.

Both run the same minimal fake agent (the scripted agent, one step that edits nothing) the
same number of times, in one run of this script:

    shell loop : for i in 1..N: RALPHCTL_ITERATION=i python -m ralphctl.agents.scripted_agent S
    ralphctl   : ralphctl run --agent scripted --script S --max-iterations N --cooldown 0

overhead per iteration = the slope of ralphctl's wall time between a short run (N/5
iterations) and a long one (N), minus the shell loop's time per iteration: fixed costs
(start-up, opening the database, the final summary) cancel out.
Start-up to the first spawn: from launching `ralphctl run` to iteration 1's `started_at`,
which the runner takes right before it spawns the agent.

Budgets (printed, never asserted): <= 10 ms per iteration; <= 300 ms start-up to first spawn.

    .venv/bin/python bench/overhead.py [N] [ROUNDS]
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ITERATIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
BIN = Path(sys.executable).parent
SCRIPT = {"steps": [{"text": "nothing to do", "cost_usd": 0.0001, "tokens": {"input": 1}}]}


def shell_loop(workdir: Path, script: Path) -> float:
    agent = f"{sys.executable} -m ralphctl.agents.scripted_agent {script}"
    loop = (
        f"for i in $(seq 1 {ITERATIONS}); do "
        f"echo prompt | RALPHCTL_ITERATION=$i {agent} > /dev/null || exit 1; done"
    )
    start = time.perf_counter()
    subprocess.run(["sh", "-c", loop], cwd=workdir, check=True)
    return time.perf_counter() - start


def ralphctl_loop(workdir: Path, script: Path, db: Path, iterations: int) -> tuple[float, float]:
    command = [
        str(BIN / "ralphctl"),
        "run",
        "--task",
        "benchmark",
        "--agent",
        "scripted",
        "--script",
        str(script),
        "--max-iterations",
        str(iterations),
        "--cooldown",
        "0",
        "--checkpoint-interval",
        "0",
        "--quiet",
        "--db",
        str(db),
        "--workdir",
        str(workdir),
    ]
    launched = time.time()
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if result.returncode != 1:  # 1: stopped by max_iterations, as intended
        raise SystemExit(f"ralphctl run failed ({result.returncode}):\n{result.stderr}")
    with sqlite3.connect(db) as conn:
        (first,) = conn.execute("SELECT started_at FROM iterations WHERE n = 1").fetchone()
    startup = _epoch(first) - launched
    return wall, startup


def _epoch(stored: str) -> float:
    moment = datetime.fromisoformat(stored)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.now().astimezone().tzinfo)
    return moment.timestamp()


def main() -> None:
    print(f"orchestration overhead: {ITERATIONS} iterations x {ROUNDS} rounds, cooldown 0")
    shells, overheads, startups = [], [], []
    for _ in range(ROUNDS):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            workdir = root / "work"
            workdir.mkdir()
            # the fake agent changes nothing: keep the no-progress breaker out of the way
            (workdir / "ralphctl.toml").write_text(
                "[loops.defaults]\nno_progress_threshold = false\n"
            )
            script = root / "script.json"
            script.write_text(json.dumps(SCRIPT))
            shell = shell_loop(workdir, script)
            short = max(1, ITERATIONS // 5)
            wall_short, startup = ralphctl_loop(workdir, script, root / "short.db", short)
            wall_long, _ = ralphctl_loop(workdir, script, root / "long.db", ITERATIONS)
        shells.append(shell / ITERATIONS * 1000)
        slope = (wall_long - wall_short) / (ITERATIONS - short)
        overheads.append((slope - shell / ITERATIONS) * 1000)
        startups.append(startup * 1000)
    shell_ms = statistics.median(shells)
    overhead_ms = statistics.median(overheads)
    startup_ms = statistics.median(startups)
    print(f"  bare shell loop, per iteration : {shell_ms:8.1f} ms  (the agent itself)")
    print(f"  ralphctl overhead, per iteration: {overhead_ms:8.1f} ms  (budget <= 10 ms)")
    print(f"  ralphctl start-up to 1st spawn : {startup_ms:8.1f} ms  (budget <= 300 ms)")
    print(f"  overhead / agent run           : {overhead_ms / shell_ms:8.2f}x")


if __name__ == "__main__":
    main()
