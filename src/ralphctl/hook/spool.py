"""The history queue of a project: Stops leave records in it, one writer at a time drains it.

In ``<project>/.ralph``:

    history/            one file per Stop record, ``<time>-<pid>-<random>.json``, written
                        under a dot-name and renamed into place (never seen half written)
    history.lock        flock held by the project's one writer for as long as it runs

Queuing takes no lock: a Stop writes its file, then tries ``history.lock`` without waiting;
if it gets it, it starts the writer (which inherits the lock), otherwise a writer runs and
will see the file. The writer stores files oldest first and deletes each once stored (one
left by a writer that died is stored again: the store's writes are idempotent), releases the
lock when none is left, and looks once more: a file queued between its last look and the
release is taken by it (it locks again) or by the Stop that queued it (which found the lock
free). No record waits for a next Stop.

Stdlib only: this runs in the Stop hook, after its decision has been printed.
"""

from __future__ import annotations

import os
import time

from ralphctl.hook.paths import RALPH_DIR, make_dirs, ralph_dir
from ralphctl.hook.regular import open_regular, read_regular

QUEUE_DIR = "history"
WRITER_LOCK_NAME = "history.lock"
SUFFIX = ".json"
#: A queued record is one small JSON object; a bigger file is not one of ours.
MAX_RECORD_BYTES = 1024 * 1024
#: A half-written record (its Stop was killed before the rename) older than this is removed.
STALE_TEMP_S = 60.0


def queue(project: str, document: str) -> str:
    """Queue one record (a JSON text) for the project's writer; returns its file."""
    ralph_dir(project)
    directory = make_dirs(project, RALPH_DIR, QUEUE_DIR)
    name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}{SUFFIX}"
    temp = os.path.join(directory, "." + name)
    fd = open_regular(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW)
    try:
        view = memoryview(document.encode("utf-8"))
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    path = os.path.join(directory, name)
    os.rename(temp, path)
    return path


def claim_writer(project: str) -> int | None:
    """The descriptor holding ``history.lock`` if no writer runs for the project (the caller
    is now its writer: closing it lets the next one in), else None."""
    import fcntl

    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
    fd = open_regular(os.path.join(ralph_dir(project), WRITER_LOCK_NAME), flags)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def queued(project: str) -> list[str]:
    """The queued records' files, oldest first."""
    directory = os.path.join(project, RALPH_DIR, QUEUE_DIR)
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [
        os.path.join(directory, name)
        for name in sorted(names)
        if name.endswith(SUFFIX) and not name.startswith(".")
    ]


def read(path: str) -> bytes | None:
    """A queued record's text; None if it is gone. OSError if it is not a record file."""
    data = read_regular(path, MAX_RECORD_BYTES + 1)
    if data is not None and len(data) > MAX_RECORD_BYTES:
        raise OSError(f"{path} is larger than {MAX_RECORD_BYTES} bytes")
    return data


def done(path: str) -> None:
    """The record in ``path`` is stored (or cannot ever be): forget it."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def sweep(project: str, now: float) -> None:
    """Remove half-written records left by Stops killed mid-write."""
    directory = os.path.join(project, RALPH_DIR, QUEUE_DIR)
    try:
        names = [name for name in os.listdir(directory) if name.startswith(".")]
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in names:
        path = os.path.join(directory, name)
        try:
            if now - os.lstat(path).st_mtime > STALE_TEMP_S:
                os.unlink(path)
        except FileNotFoundError:
            pass
