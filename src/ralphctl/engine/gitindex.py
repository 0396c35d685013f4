"""The user's git index file, as the progress probe and the checkpoints handle it.

- ``signature``: inode, size and mtime of an index file. Git replaces the file whenever it
  writes it, so "the user's index changed" costs one ``stat``.
- ``StagedTree``: a tree written from a private copy of the user's index with the work dir
  staged into it (``git add -A -- .``), and the signature of the user's index it was copied
  from: while that index is unchanged, the copy is what ``git add -A`` would make of it.
- ``same_content``: whether two index files hold the same bytes, told by the hash git ends
  each with.
- ``IndexLock``: git's own lock protocol (``index.lock`` created exclusively, renamed over the
  index), so that no git command writes the index meanwhile and a new one appears atomically.

Copies keep the source's mtime: git re-hashes the entries at least as recent as their index
file ("racily clean"), so a copy stamped later would make git trust stat data it must not.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

Signature = tuple[int, int, int]  # inode, size, mtime in ns
NO_INDEX: Signature = (-1, -1, -1)  # no index file (nothing ever staged)
HASH_BYTES = 32  # the longest hash that ends an index file (SHA-256; SHA-1's is 20)
SHA1_BYTES = 20


@dataclass(frozen=True, slots=True)
class StagedTree:
    """Tree ``tree``, staged in ``index``: a copy of ``user_index`` taken at signature ``base``."""

    tree: str
    index: Path
    user_index: Path
    base: Signature

    def current(self) -> bool:
        """Whether the user's index is still the one the copy was made from."""
        return signature(self.user_index) == self.base


class IndexLocked(Exception):
    """Another git process holds the index lock; the message is fit for the user."""


def signature(path: Path) -> Signature:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return NO_INDEX
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def copy_index(source: Path, target: Path) -> None:
    """Copy index file ``source`` to ``target`` with its mtime (see the module docstring)."""
    shutil.copyfile(source, target)
    stat = source.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def same_content(one: Path, other: Path) -> bool:
    """Whether two index files hold the same bytes (a missing file holds none).

    Git ends an index file with the hash of all that precedes it, so two of one size with the
    same end are the same file: 32 bytes are read, not two files (1.7 MB each on 20,000
    files). An index written without its hash (``index.skipHash``: zeros) is compared whole.
    """
    try:
        with one.open("rb") as first, other.open("rb") as second:
            size = os.fstat(first.fileno()).st_size
            if size != os.fstat(second.fileno()).st_size:
                return False
            if size >= HASH_BYTES:
                first.seek(-HASH_BYTES, os.SEEK_END)
                second.seek(-HASH_BYTES, os.SEEK_END)
                end = first.read(HASH_BYTES)
                if end != second.read(HASH_BYTES):
                    return False
                if end[-SHA1_BYTES:] != bytes(SHA1_BYTES):
                    return True
                first.seek(0)
                second.seek(0)
            return first.read() == second.read()
    except FileNotFoundError:
        return False


class IndexLock:
    """``with IndexLock(index) as lock``: hold ``index.lock``; ``lock.install(source)`` then
    ``lock.commit()`` replace the index with a copy of ``source``. Without ``commit`` the lock
    is removed and the index stays as it was."""

    def __init__(self, index: Path) -> None:
        self.index = index
        self.path = index.with_name(index.name + ".lock")
        self._held = False

    def __enter__(self) -> IndexLock:
        try:
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            raise IndexLocked(
                f"{self.path} exists: another git process is using the index "
                "(if none is, remove the file)"
            ) from None
        self._held = True
        return self

    def install(self, source: Path) -> None:
        copy_index(source, self.path)

    def commit(self) -> None:
        os.replace(self.path, self.index)
        self._held = False

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._held:
            self.path.unlink(missing_ok=True)
            self._held = False
