"""Did an iteration change anything? The git tree of the whole work dir, before and after.

The tree is written from a throw-away index after ``git add -A``, so it covers tracked edits,
new untracked files and their contents, and commits alike, while ignored files (``.ralph/``
among them) do not count. The user's index, HEAD and files are never touched.

What it costs on a big repository is what git has to look at, so a loop takes one tree per
iteration, not two:
- the tree after iteration n is the tree before n+1, unless something that may change files
  ran in between: a checkpoint commit in a repository with git hooks (``committed``), or a
  long wait such as a park (``forget``); then the next ``before`` takes the tree again;
- the throw-away index is kept for the whole run, so git's stat cache in it stays warm and
  ``git add -A`` hashes only the files that changed; when it changed nothing (the index file
  was not rewritten), the tree is the last one and ``write-tree`` is not run. The index is a
  copy of the user's, taken again whenever that one changes (a commit, a ``git add``), so
  files the user tracks although they are ignored count exactly as in the user's own index.
  One difference with a fresh copy per tree: an untracked file seen once and ignored later
  (a new ``.gitignore`` line) still counts until the user's index changes.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

GIT_TIMEOUT_S = 60.0

_Signature = tuple[int, int, int]  # inode, size, mtime in ns: "this index file changed"
_NO_INDEX: _Signature = (-1, -1, -1)  # the user has no index yet (nothing ever staged)


class ProgressProbe:
    """The work dir's tree before and after each iteration of one run; ``close`` at its end."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._scratch: Path | None = None  # a private directory holding the throw-away index
        self._user_index: Path | None = None
        self._hooks: Path | None = None
        self._work_tree = False  # known once _locate found the repository
        self._seeded_from: _Signature | None = None
        self._written: tuple[_Signature, str] | None = None  # the scratch index and its tree
        self._last_after: str | None = None

    async def is_work_tree(self) -> bool:
        """Whether the work dir is in a git work tree. The same git call finds the index and
        hooks the trees need, so a run asks git once before its first agent, not twice."""
        return await self._locate() and self._work_tree

    async def before(self) -> str | None:
        """The tree as the agent is about to start; None when git cannot tell."""
        tree, self._last_after = self._last_after, None
        return tree if tree is not None else await self._tree()

    async def after(self) -> str | None:
        """The tree once the iteration is over (and, unless forgotten, the next one's before)."""
        self._last_after = await self._tree()
        return self._last_after

    def forget(self) -> None:
        """Files may have changed since ``after``: the next ``before`` looks again."""
        self._last_after = None

    def committed(self) -> None:
        """A commit ran in the work dir: if the repository has git hooks, they may have edited
        files, and the next ``before`` looks again."""
        if self._hooks is None or _has_hooks(self._hooks):
            self.forget()

    def close(self) -> None:
        """Remove the throw-away index."""
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        self._seeded_from = None
        self._written = None
        self._last_after = None

    async def _tree(self) -> str | None:
        index = await self._index()
        if index is None:
            return None
        env = {"GIT_INDEX_FILE": str(index)}
        if await _git(self.workdir, "add", "-A", "--", ".", env=env) is None:
            self.close()  # a killed git may leave its lock behind: start again from a copy
            return None
        if self._written is not None and self._written[0] == _signature(index):
            return self._written[1]  # git add rewrote nothing: the tree is the last one
        tree = await _git(self.workdir, "write-tree", env=env)
        if tree is None:
            return None
        self._written = _signature(index), tree.strip()  # write-tree may rewrite the index
        return self._written[1]

    async def _index(self) -> Path | None:
        """The throw-away index, a fresh copy of the user's when that one changed."""
        if not await self._locate():
            return None
        assert self._user_index is not None
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="ralphctl-progress-"))
        index = self._scratch / "index"
        signature = _signature(self._user_index)
        if signature != self._seeded_from:
            index.unlink(missing_ok=True)
            self._seeded_from = self._written = None
            if signature != _NO_INDEX:
                try:
                    shutil.copyfile(self._user_index, index)
                except FileNotFoundError:  # replaced by git just now: copy it next time
                    return None
            self._seeded_from = signature
        return index

    async def _locate(self) -> bool:
        """Find the user's index and hooks (once); False when git cannot tell."""
        if self._user_index is None:
            found = await _git(
                self.workdir,
                "rev-parse",
                "--is-inside-work-tree",
                "--git-path",
                "index",
                "--git-path",
                "hooks",
            )
            if found is None:
                return False
            inside, index, hooks = found.splitlines()
            self._work_tree = inside == "true"
            self._user_index, self._hooks = self.workdir / index, self.workdir / hooks
        return True


def _has_hooks(directory: Path) -> bool:
    """Whether ``directory`` holds a git hook that would run (not a ``.sample``)."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return False  # no hooks directory: no hooks
    return any(
        entry.is_file() and not entry.name.endswith(".sample") and os.access(entry, os.X_OK)
        for entry in entries
    )


def _signature(path: Path) -> _Signature:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return _NO_INDEX
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


async def _git(workdir: Path, *args: str, env: dict[str, str] | None = None) -> str | None:
    """git's output, or None when it failed, timed out or could not start. It runs in a worker
    thread: measured cheaper than an asyncio subprocess (half the CPU of the spawn)."""
    try:
        done = await asyncio.to_thread(
            subprocess.run,
            ["git", *args],
            cwd=workdir,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode(errors="replace") if done.returncode == 0 else None
