"""Stand-ins for agents left behind by a runner that died, and looking at process groups."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

Popen = subprocess.Popen[bytes]
#: ``spawn(script, loop_id=..., members=1)``: see ``spawner``.
Spawn = Callable[..., tuple[Popen, float]]


def live(pgid: int) -> list[int]:
    """The pids of process group ``pgid`` that still run (zombies do not count)."""
    members = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                members.append(process.pid)
    return members


def of_loop(loop_id: str) -> list[int]:
    """The live processes whose environment names the loop (its agents and their children)."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.environ().get("RALPHCTL_LOOP_ID") == loop_id:
                found.append(process.pid)
    return found


def asleep(pid: int) -> bool:
    """The process waits with no child: a scripted agent in its ``sleep_s``, done writing (a
    runner killed before it wrote would leave it to die of the broken pipe instead)."""
    try:
        process = psutil.Process(pid)
        return process.status() == psutil.STATUS_SLEEPING and not process.children()
    except psutil.Error:
        return False


def pid_in(path: Path) -> int | None:
    """The pid an agent wrote to ``path`` (``echo $PPID > path``), once it is there."""
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def asleep_in(path: Path) -> bool:
    """The agent whose pid is in ``path`` is ``asleep``."""
    pid = pid_in(path)
    return pid is not None and asleep(pid)


def exec_done(pid: int) -> bool:
    """The process shows its environment (it is not in the middle of an exec)."""
    try:
        return bool(psutil.Process(pid).environ())
    except psutil.Error:
        return False


def runs(pid: int, program: str) -> bool:
    """The process runs ``program``, its exec done."""
    try:
        return psutil.Process(pid).name() == program and exec_done(pid)
    except psutil.Error:
        return False


def wait_for(condition: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@contextmanager
def spawner() -> Iterator[Spawn]:
    """``spawn(script, loop_id=..., members=1)`` starts ``sh -c SCRIPT`` as a runner starts an
    agent (a new session, ``RALPHCTL_LOOP_ID`` in its environment), waits for ``members`` of
    its group to run (or for it to exit), and returns it with the start time a runner would
    record. Ready means the leader runs ``sh`` (PROGRAM for a script ``exec PROGRAM …``): before
    its exec a child shows this process's environment, and during one none. Every group
    started is killed at the end."""
    started: list[Popen] = []

    def spawn(script: str, *, loop_id: str, members: int = 1) -> tuple[Popen, float]:
        at = time.time()
        env = {**os.environ, "RALPHCTL_LOOP_ID": loop_id}
        process = subprocess.Popen(
            ["sh", "-c", script], env=env, start_new_session=True, stdout=subprocess.PIPE
        )
        started.append(process)

        leader = script.split()[1] if script.startswith("exec ") else "sh"

        def ready() -> bool:
            settled = len(live(process.pid)) >= members and runs(process.pid, leader)
            return settled or process.poll() is not None

        wait_for(ready)
        return process, at

    try:
        yield spawn
    finally:
        for process in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
