"""Run a short command (``--version``, an install) to its end, or past a deadline kill it with
everything it started: CLIs published on npm are often a script that starts the real binary,
which would otherwise keep the output pipe open long after the script was killed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


class TimedOut(Exception):
    """The command was still running at its deadline; it and its children were killed."""


@dataclass(frozen=True, slots=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str  # empty when stderr went into stdout


def run_bounded(
    argv: Sequence[str], *, timeout_s: float, cwd: Path | None = None, merge_stderr: bool = False
) -> Finished:
    """Run ``argv`` with no stdin; OSError when it cannot start, TimedOut past ``timeout_s``."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,  # its own process group, killed whole at the deadline
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise TimedOut(f"no end after {timeout_s:g} s") from None
    return Finished(process.returncode, stdout, stderr or "")
