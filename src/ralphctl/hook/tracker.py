"""Read and write tracker files: frontmatter the hook owns, a body the agent owns.

Every write is atomic (a temp file in the same directory, fsync, rename). Callers hold the
tracker's ``FileLock`` around read-decide-write; ``save_fields`` re-reads the body right
before writing so that the agent's edits to it are never lost.
"""

from __future__ import annotations

import os

from ralphctl.atomic import write_atomic
from ralphctl.hook import frontmatter
from ralphctl.hook.frontmatter import FrontmatterError, Scalar
from ralphctl.hook.lock import FileLock
from ralphctl.hook.paths import lock_for
from ralphctl.hook.regular import read_regular

#: A tracker is a small text file; anything bigger is not one of ours.
MAX_TRACKER_BYTES = 4 * 1024 * 1024


class TrackerError(Exception):
    """A tracker exists but cannot be read or understood (the hook then fails open)."""


class Tracker:
    """One tracker file as read: its frontmatter ``fields`` and the markdown ``body``."""

    __slots__ = ("body", "fields", "path")

    def __init__(self, path: str, fields: dict[str, Scalar], body: str) -> None:
        self.path = path
        self.fields = fields
        self.body = body

    def __repr__(self) -> str:
        return f"Tracker({self.path!r}, {self.fields!r})"


def load(path: str, *, legacy: bool = False) -> Tracker | None:
    """The tracker at ``path``; None if there is none; TrackerError if it is unreadable.

    ``legacy``: the official plugin's file, whose quoted values are written unescaped; it is
    read strictly first (ralphctl's own rewrites are escaped), then as the plugin reads it.
    """
    text = read_text(path)
    if text is None:
        return None
    try:
        fields, body = frontmatter.parse(text)
    except FrontmatterError as exc:
        if not legacy:
            raise TrackerError(f"{path}: {exc}") from None
        try:
            fields, body = frontmatter.parse(text, verbatim_quotes=True)
        except FrontmatterError:
            raise TrackerError(f"{path}: {exc}") from None
    return Tracker(path, fields, body)


def read_text(path: str) -> str | None:
    """The tracker's text; None if there is none. A FIFO or a device is never opened for
    reading (``hook.regular``): it would hang the hook with the lock held."""
    try:
        data = read_regular(path, MAX_TRACKER_BYTES + 1)
    except OSError as exc:
        raise TrackerError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if data is None:
        return None
    if len(data) > MAX_TRACKER_BYTES:
        raise TrackerError(f"{path}: larger than {MAX_TRACKER_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrackerError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def new_loop_id() -> str:
    """A store loop id, in the shape of fresh loops' ids (12 hex digits)."""
    return os.urandom(6).hex()


def write(path: str, fields: dict[str, Scalar], body: str) -> None:
    """Write a whole tracker atomically (used for new trackers and under the lock)."""
    write_atomic(path, frontmatter.render(fields, body))


def save_fields(path: str, fields: dict[str, Scalar], *, legacy: bool = False) -> bool:
    """Replace the frontmatter of ``path``, keeping the body as it is on disk right now.

    Returns False, writing nothing, if the tracker has disappeared (deleting it is how the
    official plugin cancels a loop: it must not come back). Call it under the lock.
    """
    current = load(path, legacy=legacy)
    if current is None:
        return False
    write(path, fields, current.body)
    return True


def archive(path: str) -> str:
    """Move a finished tracker aside as ``loop-tracker.N.md`` (first free N); returns it.

    Call it under the tracker's lock. The agent's notes of an earlier loop are never lost.
    """
    stem, extension = os.path.splitext(path)
    number = 1
    while os.path.exists(f"{stem}.{number}{extension}"):
        number += 1
    target = f"{stem}.{number}{extension}"
    os.rename(path, target)
    return target


def update_fields(path: str, changes: dict[str, Scalar]) -> bool:
    """Merge ``changes`` into one of our trackers' frontmatter, under its lock.

    For writers other than the hook (e.g. a runner recording ``cost_usd`` and ``tokens``).
    Returns False, writing nothing, if the tracker does not exist.
    """
    if not os.path.isfile(path):
        return False
    with FileLock(lock_for(path)):
        current = load(path)
        return current is not None and save_fields(path, current.fields | changes)
