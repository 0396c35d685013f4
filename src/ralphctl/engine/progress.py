"""Did an iteration change anything? A fingerprint of the work dir's content, before and after.

The content is what ``git add -A -- .`` would stage: tracked edits, new untracked files and
their contents, deletions, and commits alike, while ignored files (``.ralph/`` among them) do
not count. It is compared against a private copy of the user's index, kept for the whole run,
so git's stat cache in it stays warm and each look costs about one ``git status``; the user's
index, HEAD and files are never touched.

One git command per look, against the private index as last staged (the base):
- a light look, ``git add -A --dry-run``, names every path whose content differs from the base
  without writing the index (on 20,000 files, writing it costs a third of the look);
- a staging look, ``git add -A -v``, names the same paths and stages them: the base becomes the
  content seen. A loop stages when a checkpoint follows (which needs the content as a tree), a
  light look that names too many paths or a submodule stages, and so does ``staged`` when the
  last look was light.
Two looks against the same base differ when they name other paths or a path holding other
content (``engine/changed_paths``). The fingerprint is therefore a counter of content changes,
and the git tree of the content is written only when someone needs it: a checkpoint
(``staged``), or a new copy of the user's index. A run's first look (on the way to its first
agent) writes none: a copy that a failed git makes the probe drop before its tree was written
is counted as a change against the next one. The copy is taken again whenever the user's
index changes (a commit, a ``git add``; not when a checkpoint installed this very index as the
user's), so files the user tracks although they are ignored count exactly as in the user's own
index; the trees of the old and the new copy then decide whether the content changed. One
difference with a fresh copy per look: an untracked file seen once and ignored later (a new
``.gitignore`` line) still counts until the user's index changes.

A loop takes one fingerprint per iteration: the one after iteration n is the one before n+1,
unless something may have changed files in between that is not the agent's progress (a long
wait such as a park: ``forget``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ralphctl.engine.changed_paths import Listing, listing, parse
from ralphctl.engine.changed_paths import same_content as same_listing
from ralphctl.engine.gitindex import NO_INDEX, StagedTree, copy_index, same_content, signature

GIT_TIMEOUT_S = 60.0
#: A light look reads what each path it names holds: beyond this many, it stages them instead.
MAX_LISTED = 200


class ProgressProbe:
    """The work dir's content before and after each iteration of one run; ``close`` at its end.

    Fingerprints are opaque strings: equal means the same content, within one probe."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._scratch: Path | None = None  # a private directory holding the private index
        self._env: dict[str, str] | None = None  # git's environment on the private index
        self._user_index: Path | None = None
        self._top: Path | None = None  # the top of the work tree: git names paths from there
        self._work_tree = False  # known once _locate found the repository
        self._pathspec: tuple[str, ...] = ("--", ".")  # none at the top: the same, cheaper
        self._seeded_from = NO_INDEX  # the user's index the private one was copied from
        self._changes = 0  # content changes seen: the fingerprint
        self._tree: str | None = None  # the tree of the private index, once written
        self._listed: Listing = {}  # what the last look found changed since the base
        self._last_after: str | None = None

    async def is_work_tree(self) -> bool:
        """Whether the work dir is in a git work tree. The same git call finds the index the
        fingerprints need, so a run asks git once before its first agent, not twice."""
        return await self._locate() and self._work_tree

    async def before(self) -> str | None:
        """The fingerprint as the agent is about to start; None when git cannot tell."""
        fingerprint, self._last_after = self._last_after, None
        return fingerprint if fingerprint is not None else await self._look()

    async def after(self, *, stage: bool = False) -> str | None:
        """The fingerprint once the iteration is over (and, unless forgotten, the next one's
        before); ``stage``: a checkpoint of this content follows (``staged``)."""
        self._last_after = await self._look(stage=stage)
        return self._last_after

    def forget(self) -> None:
        """Files may have changed since ``after``: the next ``before`` looks again."""
        self._last_after = None

    async def staged(self) -> StagedTree | None:
        """The content ``after`` saw, as a tree staged in the private index, for a checkpoint;
        None once forgotten or when the user's index changed since the copy."""
        if self._last_after is None or self._scratch is None:
            return None
        index = self._scratch / "index"
        if not self._copy_is_current(index):
            return None
        if self._listed and not await self._stage():
            return None
        if self._tree is None:
            self._tree = await self._write_tree()
        if self._tree is None:
            return None
        assert self._user_index is not None
        return StagedTree(self._tree, index, self._user_index, self._seeded_from)

    def close(self) -> None:
        """Remove the private index (a later look starts from a new copy)."""
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch, self._env = None, None
        self._last_after = None

    async def _look(self, *, stage: bool = False) -> str | None:
        if not await self._locate():
            return None
        assert self._user_index is not None
        if self._scratch is not None and self._copy_is_current(self._scratch / "index"):
            changed = await self._compare(stage)
            if changed is None:
                self.close()  # a killed git may leave its lock behind: start again from a copy
                return None
            if changed:
                self._changes += 1
        elif not await self._copy_again():
            return None
        return f"content-{self._changes}"

    async def _compare(self, stage: bool) -> bool | None:
        """Whether the content changed since the last look (None when git failed); ``stage``
        makes the content the base."""
        named = await self._git("add", "-A", "-v" if stage else "--dry-run", *self._pathspec)
        if named is None:
            return None
        assert self._top is not None
        paths = parse(named)
        found = None if paths is None else listing(self._top, paths, self._listed)
        changed = found is None or not same_listing(found, self._listed)
        self._listed = found or {}
        if stage:
            self._staged(bool(named))
        elif found is None or len(found) > MAX_LISTED:
            return changed if await self._stage() else None
        return changed

    async def _stage(self) -> bool:
        """Make the content the base (the private index); False when git failed."""
        staged = await self._git("add", "-A", "-v", *self._pathspec)
        if staged is None:
            return False
        self._staged(bool(staged))
        return True

    def _staged(self, wrote: bool) -> None:
        self._listed = {}
        if wrote:
            self._tree = None

    def _copy_is_current(self, index: Path) -> bool:
        """Whether the private index is still a copy of the user's: the user's did not change,
        or it did to the very bytes of the private one (a checkpoint installed it)."""
        assert self._user_index is not None
        now = signature(self._user_index)
        if now != self._seeded_from and same_content(self._user_index, index):
            self._seeded_from = now
        return now == self._seeded_from

    async def _copy_again(self) -> bool:
        """Stage the work dir into a new copy of the user's index; the content changed when its
        tree is not the last content's, or when the last content was never staged (its tree is
        unknown: counted as a change). False when git failed."""
        assert self._user_index is not None
        unknown = bool(self._listed)
        old = self._tree
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="ralphctl-progress-"))
        index = self._scratch / "index"
        if old is None and index.exists() and not unknown:
            old = await self._write_tree()
        seeded_from = signature(self._user_index)
        index.unlink(missing_ok=True)
        if seeded_from != NO_INDEX:
            try:
                copy_index(self._user_index, index)
            except FileNotFoundError:  # replaced by git just now: copy it next time
                return False
        self._seeded_from = seeded_from
        if await self._git("add", "-A", *self._pathspec) is None:
            self.close()
            return False
        tree = None  # with no tree to compare (a run's first look), written once needed
        if old is not None and (tree := await self._write_tree()) is None:
            self.close()
            return False
        if unknown or tree is None or tree != old:
            self._changes += 1
        self._tree, self._listed = tree, {}
        return True

    async def _write_tree(self) -> str | None:
        tree = await self._git("write-tree")
        return tree.strip() if tree else None

    async def _git(self, *args: str) -> str | None:
        """git on the private index, with an environment built once per private index."""
        assert self._scratch is not None
        if self._env is None:  # in English: the paths git names are parsed (changed_paths)
            index = str(self._scratch / "index")
            self._env = {**os.environ, "GIT_INDEX_FILE": index, "LC_ALL": "C", "LANGUAGE": ""}
        return await _git(self.workdir, *args, env=self._env)

    async def _locate(self) -> bool:
        """Find the user's index (once); False when git cannot tell."""
        if self._user_index is None:
            found = await _git(
                self.workdir,
                "rev-parse",
                "--is-inside-work-tree",
                "--show-prefix",
                "--git-path",
                "index",
            )
            if found is None:
                return False
            inside, prefix, index = found.splitlines()
            self._work_tree = inside == "true"
            self._top = self.workdir.joinpath(*[".."] * len(Path(prefix).parts))
            if self._work_tree and not prefix:  # the whole work tree is ``.``: no pathspec to
                self._pathspec = ()  # match 20,000 paths against (2 ms a look on 20,000 files)
            self._user_index = self.workdir / index
        return True


async def _git(workdir: Path, *args: str, env: dict[str, str] | None = None) -> str | None:
    """git's output, or None when it failed, timed out or could not start; ``env`` is its whole
    environment (None: this process's). It runs in a worker thread: measured cheaper than an
    asyncio subprocess (half the CPU of the spawn)."""
    try:
        done = await asyncio.to_thread(
            subprocess.run,
            ["git", *args],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode(errors="surrogateescape") if done.returncode == 0 else None
