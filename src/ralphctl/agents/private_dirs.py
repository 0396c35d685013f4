"""Folders only this user can enter, for the files of a run that others must not read or
plant: the prompt file, and the usage files some CLIs write for ralphctl."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ralphctl.agents.base import AgentRequest


def make_private_dirs(folder: Path) -> None:
    """Create ``folder`` and its missing parents, each with mode 0700 (``mkdir -p`` would give
    the parents the default mode)."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for each in reversed(missing):
        each.mkdir(mode=0o700, exist_ok=True)


def run_file(request: AgentRequest, name: str) -> Path:
    """Where a CLI writes a file of this run for ralphctl: next to the run's private prompt
    file when the engine gives one, else in this user's ralphctl temp dir. Under ralphctl's
    ``--sandbox``, where both are hidden from the agent, in the work dir's ``.ralph/runs``
    (writable there, never committed; a folder, as a CLI may write the file by renaming a
    new one over it). The folder is created here, closed to others (a CLI would create it
    open to all)."""
    if request.sandboxed:
        folder = request.workdir / ".ralph" / "runs"
    elif request.prompt_path is not None:
        folder = request.prompt_path.parent
    else:
        folder = Path(tempfile.gettempdir()) / f"ralphctl-{os.getuid()}"
    make_private_dirs(folder)
    return folder / name
