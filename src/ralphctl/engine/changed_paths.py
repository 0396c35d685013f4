"""The paths ``git add -A`` names (``-v``, or ``--dry-run`` when it must not stage them), with
what each holds now: two such listings, taken against the same index, tell whether the content
changed between them.

Git names a path when what the work tree holds there differs from the index (it compares
content, not only stat data): a changed or new file, a symlink, a removed path. Its content is
read here once per change of its stat data (mode, size, mtime, ctime, inode), like git's own
stat cache; a file modified so recently that a second change could keep the same timestamp is
read again at every listing (git's "racily clean" rule, with a margin for coarse clocks).
A directory (a submodule's new commit) cannot be told by its stat data: ``listing`` returns
None and the caller stages it instead.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

#: Files modified less than this long before a listing are read again at the next one.
RACY_NS = 3_000_000_000
_VERBS = {"add": False, "remove": True}  # git's words (LC_ALL=C), and whether the path is gone


@dataclass(frozen=True, slots=True)
class Seen:
    """What one path held at a listing: its stat data, its content's key, and when it was read."""

    stat: tuple[int, ...]
    content: tuple[object, ...]
    read_at_ns: int


Listing = dict[str, Seen]
GONE = Seen((), ("gone",), 0)


def parse(output: str) -> list[tuple[str, bool]] | None:
    """``(path, removed)`` per line of git's ``add '<path>'`` / ``remove '<path>'`` (paths
    from the top of the work tree); None when a line is not one of those."""
    named = []
    for line in output.splitlines():
        verb, _, quoted = line.partition(" ")
        if verb not in _VERBS or len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
            return None
        named.append((quoted[1:-1], _VERBS[verb]))
    return named


def listing(top: Path, named: list[tuple[str, bool]], previous: Listing) -> Listing | None:
    """What each named path holds now, its content read again only when its stat data changed
    since ``previous`` (or is too recent to trust); None when a path is a directory."""
    now = time.time_ns()
    found: Listing = {}
    for path, removed in named:
        seen = GONE if removed else _look_at(top / path, previous.get(path), now)
        if seen is None:
            return None
        found[path] = seen
    return found


def same_content(one: Listing, other: Listing) -> bool:
    """Whether two listings name the same paths holding the same content."""
    return one.keys() == other.keys() and all(
        seen.content == other[path].content for path, seen in one.items()
    )


def _look_at(path: Path, before: Seen | None, now: int) -> Seen | None:
    try:
        found = path.lstat()
    except OSError:  # gone since git looked: the next listing says so
        return GONE
    if stat.S_ISDIR(found.st_mode):
        return None
    key = (found.st_mode, found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino)
    trusted = before is not None and before.stat == key
    if trusted and before is not None and found.st_mtime_ns < before.read_at_ns - RACY_NS:
        return before
    return Seen(key, _content(path, key), now)


def _content(path: Path, key: tuple[int, ...]) -> tuple[object, ...]:
    """What git would stage: a symlink's target, a file's bytes (by digest) and executable bit."""
    mode = key[0]
    try:
        if stat.S_ISLNK(mode):
            return ("link", os.readlink(path))
        with path.open("rb") as file:
            digest = hashlib.file_digest(file, "sha1").digest()
    except OSError:  # unreadable: git cannot stage it either; its stat data tells
        return ("unreadable", key)
    return ("file", bool(mode & stat.S_IXUSR), digest)
