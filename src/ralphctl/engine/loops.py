"""A new loop's record, as every way of starting one creates it (run, manager, hook mode)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

from ralphctl.domain.config import LoopConfig
from ralphctl.domain.states import LoopStatus
from ralphctl.store.records import LoopRecord

NAME_CHARS = 48


def default_name(task: str) -> str:
    """The first words of the task, short enough for a table."""
    words = " ".join(task.split()[:6])
    return words if len(words) <= NAME_CHARS else words[: NAME_CHARS - 1] + "…"


def new_loop(
    task: str,
    workdir: Path,
    config: LoopConfig,
    *,
    name: str | None = None,
    mode: str = "fresh",
    workflow: str | None = None,
    loop_id: str | None = None,
    agent: str | None = None,
    agent_session_id: str | None = None,
) -> LoopRecord:
    """A pending loop, not stored yet."""
    return LoopRecord(
        id=loop_id or uuid.uuid4().hex[:12],
        name=name or default_name(task),
        mode=mode,
        agent=agent or config.agent,
        workdir=str(workdir),
        task=task,
        config=config.to_json(),
        status=LoopStatus.PENDING,
        created_at=datetime.now(UTC),
        workflow=workflow,
        agent_session_id=agent_session_id,
    )
