"""An agent CLI stand-in for the command tests: an executable that does nothing."""

from __future__ import annotations

from pathlib import Path


def put_executable(path: Path) -> Path:
    """An empty ``/bin/sh`` script at ``path`` (its folder made), executable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path
