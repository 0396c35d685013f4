"""An exclusive ``flock`` on a lock file, with a deadline so that a hook can never hang."""

from __future__ import annotations

import os
import time

from ralphctl.hook.regular import open_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType

LOCK_TIMEOUT_S = 10.0
_FIRST_WAIT_S = 0.0005
_LONGEST_WAIT_S = 0.02


class LockTimeout(OSError):
    """Another process held the lock for longer than the deadline."""


class FileLock:
    """``with FileLock(path):`` holds ``flock(LOCK_EX)`` on ``path`` (created if missing).

    The lock lives on a file of its own, never on the tracker, because the tracker is
    replaced by rename on every write.
    """

    def __init__(self, path: str, timeout: float | None = None) -> None:
        self.path = path
        self.timeout = LOCK_TIMEOUT_S if timeout is None else timeout
        self._fd = -1

    def __enter__(self) -> FileLock:
        import fcntl

        fd = open_regular(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW)
        deadline = time.monotonic() + self.timeout
        wait = _FIRST_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeout(f"{self.path} stayed locked for {self.timeout:g}s") from None
                time.sleep(wait)
                wait = min(wait * 2, _LONGEST_WAIT_S)
            except BaseException:
                os.close(fd)
                raise
            else:
                self._fd = fd
                return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        os.close(self._fd)  # closing the descriptor releases the flock
        self._fd = -1
