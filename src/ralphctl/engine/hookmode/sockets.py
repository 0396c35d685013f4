"""Where hook-mode runners listen: one Unix socket per runner, in a runtime dir per user.

The dir is ``$XDG_RUNTIME_DIR/ralphctl`` when that is set, else ``<temp dir>/ralphctl-<uid>``:
the user's own, mode 0700, so no other user can reach a runner (one that belongs to someone
else, or is not a directory, is refused). A socket is named ``<pid>-<loop id>.sock`` after
the process that listens on it; the runner removes it when it ends. One left behind by a
runner that died is removed by the next manager's start-up (``remove_stale``): only when its
process is gone and nothing accepts a connection on it, so a live runner's never is.

A Unix socket's path has a hard limit (107 bytes on Linux, 103 on macOS): when the runtime
dir is too deep for it (a long ``$XDG_RUNTIME_DIR`` or ``$TMPDIR``), the socket goes to
``/tmp/ralphctl-<uid>`` instead, made and checked the same way.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ralphctl.agents.process import pid_exists

SUFFIX = ".sock"
PROBE_TIMEOUT_S = 0.2
#: The longest socket path every platform binds (macOS: 104 bytes with the final NUL).
MAX_SOCKET_PATH = 103


class UnsafeRuntimeDir(OSError):
    """The runtime dir exists but is not a private directory of this user's."""


def runtime_dir() -> Path:
    """Where this user's runners put their sockets (it may not exist yet)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isabs(base) and os.path.isdir(base):
        return Path(base) / "ralphctl"
    return Path(tempfile.gettempdir()) / f"ralphctl-{os.getuid()}"


def short_dir() -> Path:
    """Where sockets go when the runtime dir is too deep for a socket's path."""
    return Path("/tmp") / f"ralphctl-{os.getuid()}"


@contextlib.contextmanager
def listening_path(loop_id: str) -> Iterator[str]:
    """The socket path of this process's runner of ``loop_id``, removed when the block ends."""
    name = f"{os.getpid()}-{loop_id}{SUFFIX}"
    folder = runtime_dir()
    if len(os.fsencode(folder / name)) > MAX_SOCKET_PATH:
        folder = short_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_private(folder)
    path = folder / name
    path.unlink(missing_ok=True)  # left by an earlier process that had this pid
    try:
        yield str(path)
    finally:
        path.unlink(missing_ok=True)


def remove_stale() -> list[Path]:
    """Remove the sockets of runners that died; returns them."""
    removed = []
    for folder in dict.fromkeys((runtime_dir(), short_dir())):
        try:
            _check_private(folder)
            entries = list(folder.iterdir())
        except OSError:  # none yet, or not ours to tidy
            continue
        for path in entries:
            if _stale(path):
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def _stale(path: Path) -> bool:
    """A runner's socket whose process is gone (or is this one, which has no runner yet when
    it tidies up) and that nothing listens on."""
    pid = _pid_of(path.name)
    if pid is None or not stat.S_ISSOCK(path.lstat().st_mode):
        return False
    if pid != os.getpid() and pid_exists(pid):
        return False
    return not _answers(path)


def _pid_of(name: str) -> int | None:
    if not name.endswith(SUFFIX):
        return None
    pid, dash, loop_id = name.removesuffix(SUFFIX).partition("-")
    return int(pid) if dash and loop_id and pid.isdigit() else None


def _answers(path: Path) -> bool:
    """Whether something accepts connections on the socket (the pid may be reused, or be in
    another PID namespace: the socket itself has the last word)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(PROBE_TIMEOUT_S)
        try:
            probe.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            return False
        except OSError:
            return True  # busy (a full backlog) or not ours to judge: leave it
    return True


def _check_private(folder: Path) -> None:
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise UnsafeRuntimeDir(f"{folder} is not a directory of this user's: no socket goes there")
    if stat.S_IMODE(info.st_mode) & 0o077:
        folder.chmod(0o700)
