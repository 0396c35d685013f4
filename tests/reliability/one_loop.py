"""Runs a loop of the ``claude`` adapter in this process, for tests that measure or kill a
runner: ``python -m tests.reliability.one_loop DB_URL WORKDIR LOOP_ID MAX_ITERATIONS``.

The loop is created unless it exists (then it is resumed). At the end, prints one JSON line:
the loop's status, and the runner's peak RSS in MB (Linux).
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from ralphctl.agents.claude import ClaudeAdapter
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.states import LoopStatus
from ralphctl.engine.runner import LoopRunner
from ralphctl.store.errors import LoopNotFound
from ralphctl.store.records import LoopRecord
from ralphctl.store.repository import Store


def main(url: str, workdir: str, loop_id: str, max_iterations: str) -> None:
    config = LoopConfig(
        max_iterations=int(max_iterations),
        cooldown=0,
        checkpoint_interval=0,
        error_backoff_cap=0,
        no_progress_threshold=None,  # the stand-in agents change no file
        agent="claude",
    )
    store = Store.open(url)
    try:
        loop = store.get_loop(loop_id)
    except LoopNotFound:
        loop = store.create_loop(
            LoopRecord(
                id=loop_id,
                name="reliability",
                mode="fresh",
                agent="claude",
                workdir=workdir,
                task="Print what you like.",
                config=config.to_json(),
                status=LoopStatus.PENDING,
                created_at=datetime.now(UTC),
            )
        )
    final = asyncio.run(LoopRunner(store, ClaudeAdapter(), loop, config).run())
    print(json.dumps({"status": str(final.status), "peak_rss_mb": round(peak_rss_mb(), 1)}))


def peak_rss_mb() -> float:
    """This process's peak resident size (``VmHWM``). Not ``getrusage``'s ``ru_maxrss``: Linux
    carries that over ``exec`` from the forked parent, so it would count the test runner."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


if __name__ == "__main__":
    main(*sys.argv[1:])
