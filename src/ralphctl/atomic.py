"""Replace a file whole or not at all: the one atomic write of ralphctl.

A temp file beside the target is written and fsync-ed, renamed over the target, then the
directory is fsync-ed so that the rename itself survives a crash. Readers see the old file or
the new one, never a mix. Only ``os``: the Stop hook uses it on its hot path.
"""

from __future__ import annotations

import os

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def write_atomic(
    path: str | os.PathLike[str], data: str | bytes, *, mode: int | None = None
) -> None:
    """Replace ``path`` with ``data`` (text is UTF-8).

    ``mode``: the file's permissions. By default a replaced file keeps its own and a new one
    gets the usual ``0o666`` less the umask. With a ``mode`` the content is never readable
    under wider permissions, not even while it is written.
    """
    target = os.fspath(path)
    directory = os.path.dirname(target) or "."
    temp = os.path.join(directory, f".{os.path.basename(target)}.{os.urandom(4).hex()}.tmp")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if mode is None:
        try:
            mode = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            pass
    fd = os.open(temp, _CREATE, 0o666 if mode is None else 0o600)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    _sync_directory(directory)


def _sync_directory(directory: str) -> None:
    """Make a rename in ``directory`` durable (file systems that cannot are left be)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
