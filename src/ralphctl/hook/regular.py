"""Open only regular files, so that a FIFO, a device or a directory can never hang the hook.

Every file the hook reads or writes (trackers, the transcript, the log, lock files, temp
files) is opened with ``O_NONBLOCK``: opening a FIFO then returns at once (for reading) or
fails with ENXIO (for writing, with no reader), where a plain open would wait forever for the
other end. ``fstat`` then refuses anything that is not a regular file. On a regular file
``O_NONBLOCK`` changes nothing, so the descriptor is used as it is.
"""

from __future__ import annotations

import os

#: ``stat.S_IFMT`` and ``stat.S_IFREG``, without importing ``stat`` on the hook's path.
_FORMAT_BITS = 0o170000
_REGULAR = 0o100000
_KINDS = {0o010000: "a FIFO", 0o020000: "a character device", 0o040000: "a directory"}
_KINDS |= {0o060000: "a block device", 0o140000: "a socket"}


class NotRegularFile(OSError):
    """The path names something other than a regular file; it was not read or written."""


def open_regular(path: str, flags: int, mode: int = 0o644) -> int:
    """``os.open`` for a regular file only: NotRegularFile (an OSError) for anything else."""
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    try:
        kind = os.fstat(fd).st_mode & _FORMAT_BITS
    except BaseException:
        os.close(fd)
        raise
    if kind != _REGULAR:
        os.close(fd)
        raise NotRegularFile(f"{path} is {_KINDS.get(kind, 'not a regular file')}")
    return fd


def read_regular(path: str, limit: int, *, tail: bool = False) -> bytes | None:
    """Up to ``limit`` bytes of a regular file (its last ones with ``tail``); None if it does
    not exist. Other failures (NotRegularFile among them) raise OSError."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        if tail:
            os.lseek(fd, max(0, os.fstat(fd).st_size - limit), os.SEEK_SET)
        chunks: list[bytes] = []
        size = 0
        while size < limit:
            chunk = os.read(fd, limit - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
