"""Sentinel files: ``touch <workdir>/.ralph/stop`` (or ``pause``) controls a running loop."""

from __future__ import annotations

from pathlib import Path

from ralphctl.domain.conditions import ExternalSignal
from ralphctl.engine.statefile import RALPH_DIR


def sentinel_path(workdir: Path, signal: ExternalSignal) -> Path:
    return workdir / RALPH_DIR / str(signal)


def read_sentinel(workdir: Path) -> ExternalSignal | None:
    """Return and consume the strongest pending sentinel (stop beats pause)."""
    for signal in (ExternalSignal.STOP, ExternalSignal.PAUSE):
        path = sentinel_path(workdir, signal)
        if path.exists():
            path.unlink(missing_ok=True)
            return signal
    return None
