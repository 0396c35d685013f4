"""How asyncio learns that an agent exited: from a pidfd in the event loop, on every Python.

Python 3.12+ does this by itself where the kernel has ``pidfd_open`` (Linux 5.3+). Python 3.11
starts a thread per child that blocks in ``waitpid`` and hands the exit over to the loop, which
costs a thread start per spawn and, when the loop is busy, a wait for the GIL before the exit is
seen (about 0.3 ms an iteration, measured with bench/overhead.py). ``use_pidfd`` installs on
3.11 the watcher 3.12 uses: each child's pidfd is watched by the loop that started it, so
loops in other threads keep working. Elsewhere it does nothing.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVarTuple, Unpack

logger = logging.getLogger(__name__)
Args = TypeVarTuple("Args")


@functools.cache
def use_pidfd() -> None:
    """On Python 3.11 with ``pidfd_open``, watch children through pidfds (once per process)."""
    if sys.version_info < (3, 12) and _pidfd_works():
        asyncio.set_child_watcher(PidfdWatcher())


def _pidfd_works() -> bool:
    """Whether this kernel (and any seccomp filter) lets us open a pidfd."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


if sys.version_info < (3, 12):  # child watchers are deprecated in 3.12 and gone in 3.14

    class PidfdWatcher(asyncio.AbstractChildWatcher):
        """Python 3.12's ``PidfdChildWatcher``: the running loop of whoever starts a child reads
        its pidfd, reaps it once readable and reports its exit status."""

        def __enter__(self) -> PidfdWatcher:
            return self

        def __exit__(self, *exc_info: object) -> None:
            return None

        def is_active(self) -> bool:
            return True

        def close(self) -> None:
            return None

        def attach_loop(self, loop: asyncio.AbstractEventLoop | None) -> None:
            return None  # every child is watched by the loop running when it was started

        def add_child_handler(
            self, pid: int, callback: Callable[[int, int, Unpack[Args]], object], *args: *Args
        ) -> None:
            loop = asyncio.get_running_loop()
            pidfd = os.pidfd_open(pid)
            loop.add_reader(pidfd, self._reap, loop, pid, pidfd, callback, args)

        def remove_child_handler(self, pid: int) -> bool:
            return False  # as 3.12's: a started child is always reaped

        @staticmethod
        def _reap(
            loop: asyncio.AbstractEventLoop,
            pid: int,
            pidfd: int,
            callback: Callable[..., object],
            args: tuple[Any, ...],
        ) -> None:
            loop.remove_reader(pidfd)
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:  # reaped by someone else: its status is lost
                returncode = 255
                logger.warning("child %d was reaped elsewhere: its exit status is 255", pid)
            else:
                returncode = os.waitstatus_to_exitcode(status)
            os.close(pidfd)
            callback(pid, returncode, *args)
