"""The human-readable loop state in the work dir: ``.ralph/state.json``, written atomically.

A running loop writes it through a ``StateWriter``: the fsync-ed write runs in a worker
thread, never on the event loop that many loops (and the server) share.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ralphctl.atomic import write_atomic
from ralphctl.store.records import IterationRecord, LoopRecord

STATE_VERSION = 1
RALPH_DIR = ".ralph"
#: The newest iterations the state file lists: it is rewritten after every iteration, so its
#: size (and the CPU and I/O of each rewrite) stays bounded however long the loop runs. The
#: store keeps every iteration (``ralphctl history``).
STATE_HISTORY = 50


def ralph_dir(workdir: Path) -> Path:
    """``<workdir>/.ralph``, created with a ``.gitignore`` so git never tracks it."""
    path = workdir / RALPH_DIR
    path.mkdir(parents=True, exist_ok=True)
    ignore = path / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# written by ralphctl: loop state is not part of your project\n*\n")
    return path


def state_path(workdir: Path) -> Path:
    return workdir / RALPH_DIR / "state.json"


def check_state_file(workdir: Path) -> str | None:
    """Return a problem description if an existing state file is unreadable or corrupt."""
    path = state_path(workdir)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        return f"{path} is corrupt ({exc}); it will be rebuilt from the database"
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        return f"{path} has an unknown format; it will be rebuilt from the database"
    return None


def render_state(
    loop: LoopRecord, iterations: Sequence[IterationRecord], *, older: int = 0
) -> dict[str, Any]:
    """The seed's state document, built from the database records (the source of truth):
    the loop, and its newest ``STATE_HISTORY`` iterations (``iterations`` is oldest first, after
    ``older`` ones not given); ``historyOmitted`` counts the older ones left out."""
    shown = iterations[-STATE_HISTORY:]
    return {
        "version": STATE_VERSION,
        "loopId": loop.id,
        "task": loop.task,
        "startedAt": _iso(loop.started_at or loop.created_at),
        "iteration": loop.iteration,
        "maxIterations": loop.config.get("max_iterations"),
        "status": str(loop.status),
        "stopReason": None if loop.stop_reason is None else str(loop.stop_reason),
        "costUsd": round(loop.cost_usd, 6),
        "historyOmitted": older + len(iterations) - len(shown),
        "history": [
            {
                "iteration": it.n,
                "startedAt": _iso(it.started_at),
                "completedAt": _iso(it.completed_at),
                "status": it.status,
                "outputSummary": it.output_summary,
                "markerFound": it.completion_signal_found,
            }
            for it in shown
        ],
    }


def write_state(workdir: Path, document: dict[str, Any]) -> None:
    """Replace the work dir's state file atomically (``ralphctl.atomic``). Encoded by orjson:
    the document grows with every iteration, and the standard library's indenting encoder
    (pure Python) took most of a run's CPU per iteration after a few dozen."""
    ralph_dir(workdir)
    text = orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    write_atomic(state_path(workdir), text)


class StateWriter:
    """Writes one work dir's state file off the event loop, the newest state winning.

    The document is rendered where it is written, in a worker thread (its history takes a
    moment to render). States submitted while a write runs are coalesced: only the newest one
    is written next. ``flush()`` returns once the last state submitted is written (or has
    failed, which ``on_error`` is told, on the event loop).
    """

    def __init__(self, workdir: Path, on_error: Callable[[OSError], None]) -> None:
        self.workdir = workdir
        self._on_error = on_error
        self._pending: tuple[LoopRecord, tuple[IterationRecord, ...], int] | None = None
        self._writing: asyncio.Task[None] | None = None

    def submit(self, loop: LoopRecord, iterations: Sequence[IterationRecord]) -> None:
        """Write the state of ``loop`` soon (``render_state``; call it from the event loop)."""
        shown = tuple(iterations[-STATE_HISTORY:])
        self._pending = loop, shown, len(iterations) - len(shown)
        if self._writing is None or self._writing.done():
            self._writing = asyncio.get_running_loop().create_task(self._drain())

    async def flush(self) -> None:
        if self._writing is not None:
            await asyncio.shield(self._writing)

    async def _drain(self) -> None:
        while self._pending is not None:
            state, self._pending = self._pending, None
            try:
                await asyncio.to_thread(self._write, *state)
            except OSError as exc:
                self._on_error(exc)

    def _write(self, loop: LoopRecord, shown: tuple[IterationRecord, ...], older: int) -> None:
        write_state(self.workdir, render_state(loop, shown, older=older))


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()
