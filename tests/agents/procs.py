"""Looking at processes through /proc (Linux), to check that nothing is left running."""

from __future__ import annotations

import time
from pathlib import Path


def gone(pid: int) -> bool:
    """A killed process is gone once it is no longer running or sleeping.

    SIGKILL takes effect asynchronously: a process closes its files (so the agent's stdout
    reaches EOF) a moment before it turns into a zombie. So this waits a little for it; a
    zombie waiting for its new parent (init) counts as gone.
    """
    for _ in range(500):
        if not alive(pid):
            return True
        time.sleep(0.01)
    return False


def alive(pid: int) -> bool:
    """Running or sleeping; a zombie waiting for its parent (init) does not count."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """Live processes in process group ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def reaped(pid: int) -> bool:
    """Our child is gone for good: no process, not even a zombie."""
    return not Path(f"/proc/{pid}").exists()
