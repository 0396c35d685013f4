"""A manager process for the crash tests: starts one loop per work dir, then runs until killed.

python -m tests.manager.crash_child DB_URL SCRIPT WORKDIR...   (the scripted agent plays SCRIPT)
python -m tests.manager.crash_child DB_URL hook WORKDIR...     (hook mode: ``claude`` from env)
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from ralphctl.engine.manager import LoopManager
from ralphctl.engine.starting import LoopRequest
from ralphctl.store.repository import Store


def spec(script: str, workdir: str) -> LoopRequest:
    if script == "hook":
        return LoopRequest("Write the notes.", Path(workdir), {"error_backoff_cap": 0}, mode="hook")
    settings: dict[str, object] = {
        "cooldown": 0,
        "checkpoint_interval": 0,
        "error_backoff_cap": 0,
        "agent": "scripted",
        "script": script,
    }
    return LoopRequest("Do the work.", Path(workdir), settings)


async def main(db_url: str, script: str, workdirs: list[str]) -> None:
    manager = LoopManager(Store.open(db_url), max_concurrent=len(workdirs))
    await manager.start()
    for workdir in workdirs:
        await manager.create(spec(script, workdir))
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
