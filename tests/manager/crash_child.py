"""A manager process for the crash tests: starts one loop per work dir, then runs until killed.

python -m tests.manager.crash_child DB_URL SCRIPT WORKDIR...   (the scripted agent plays SCRIPT)
python -m tests.manager.crash_child DB_URL hook WORKDIR...     (hook mode: ``claude`` from env)
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from ralphctl.domain.config import LoopConfig
from ralphctl.engine.manager import LoopManager, LoopSpec
from ralphctl.store.repository import Store


def spec(script: str, workdir: str) -> LoopSpec:
    if script == "hook":
        config = LoopConfig(error_backoff_cap=0)
        return LoopSpec(task="Write the notes.", workdir=Path(workdir), config=config, mode="hook")
    config = LoopConfig(
        cooldown=0, checkpoint_interval=0, error_backoff_cap=0, agent="scripted", script=script
    )
    return LoopSpec(task="Do the work.", workdir=Path(workdir), config=config)


async def main(db_url: str, script: str, workdirs: list[str]) -> None:
    manager = LoopManager(Store.open(db_url), max_concurrent=len(workdirs))
    await manager.start()
    for workdir in workdirs:
        await manager.create(spec(script, workdir))
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
