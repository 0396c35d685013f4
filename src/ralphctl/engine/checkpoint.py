"""Git checkpoints: commit the work tree every N iterations; go back to one.

A checkpoint commits what ``git add -A -- .`` would stage (so .gitignore is respected and
``.ralph/`` — ignored by its own .gitignore — is never committed), with plumbing: the tree is
staged in a private copy of the user's index (usually the progress probe's, already staged and
warm: ``StagedTree``), ``git commit-tree`` makes the commit and a compare-and-swap
``git update-ref`` moves the branch. No reset, no force, no history rewrite, and no commit hook
runs: a checkpoint is ralphctl's snapshot to go back to, which a failing lint hook must not
prevent and a formatting hook must not edit behind the agent (``commit.gpgSign`` is honoured).
A run's checkpoints share a ``CheckpointMemory``: git is asked once whether to sign, and the
HEAD a checkpoint left is the next one's parent while the user's index is still the file it
installed (``update-ref``'s compare-and-swap proves it; when HEAD moved, it is read and the
commit made again on it). Four git commands for a run's first checkpoint (HEAD read while the
tree is written), three for the next ones.

On the current branch the user's index then becomes the staged copy, under git's index lock,
as ``git add -A && git commit`` would leave it: everything staged and committed, stat data
warm. On a configured branch the user's HEAD, index and files are never touched.

Going back: ``branch_at`` makes a new branch at a checkpoint (loses nothing); ``restore``
puts a checkpoint's files into the work dir (HEAD stays where it is) and is the one
operation here that discards changes: callers show ``uncommitted_changes`` first.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ralphctl.engine.gitindex import (
    IndexLock,
    IndexLocked,
    Signature,
    StagedTree,
    copy_index,
    signature,
)

GIT_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class CheckpointOutcome:
    """``sha`` when a commit was made; otherwise ``skipped`` or ``error`` says why not."""

    sha: str | None = None
    skipped: str | None = None
    error: str | None = None


class GitError(Exception):
    """A git operation that could not be done; the message is fit for the user."""


def checkpoint_message(iteration: int) -> str:
    return f"[ralph] Checkpoint iteration {iteration}"


@dataclass(frozen=True, slots=True)
class Head:
    """The user's index file, HEAD and its tree (None, None on a branch without commits)."""

    index: Path
    commit: str | None
    tree: str | None


class CheckpointMemory:
    """What a run's checkpoints keep from one to the next: whether commits are signed (the
    user's ``commit.gpgSign``, asked of git at the first checkpoint that needs it: a run keeps
    one answer), and the HEAD the last checkpoint left, trusted while the user's index is the
    very file it installed (a ``git commit`` or ``git add`` replaces that file)."""

    def __init__(self) -> None:
        self._sign: bool | None = None
        self._left: tuple[Head, Signature] | None = None

    async def sign_flags(self, workdir: Path) -> list[str]:
        """``-S`` for ``git commit-tree`` when commits are signed, else nothing."""
        if self._sign is None:
            code, out, _ = await _git(workdir, "config", "--type=bool", "--get", "commit.gpgSign")
            self._sign = code == 0 and out.strip() == "true"
        return ["-S"] if self._sign else []

    def head(self) -> Head | None:
        """The HEAD the last checkpoint left, while the user's index is the one it installed."""
        if self._left is None or signature(self._left[0].index) != self._left[1]:
            return None
        return self._left[0]

    def left(self, head: Head) -> None:
        """A checkpoint moved HEAD to ``head`` and installed the user's index it names."""
        self._left = head, signature(head.index)


async def is_git_work_tree(workdir: Path) -> bool:
    code, out, _ = await _git(workdir, "rev-parse", "--is-inside-work-tree")
    return code == 0 and out.strip() == "true"


async def create_checkpoint(
    workdir: Path,
    iteration: int,
    *,
    branch: str | None = None,
    staged: StagedTree | Awaitable[StagedTree | None] | None = None,
    memory: CheckpointMemory | None = None,
) -> CheckpointOutcome:
    """Commit everything under ``workdir``; skip when nothing changed. Errors are returned.

    ``staged`` is the work dir already staged (the progress probe's), or the coroutine that
    writes its tree (awaited while git reads HEAD): used while the user's index is still the
    one it was copied from, else the work dir is staged again. With
    ``branch`` the commit goes to that branch (created from HEAD when missing) and the work
    tree, index and HEAD are left alone; a branch that is checked out here is committed to as
    the current one. ``memory``: what a run's checkpoints keep from one to the next (without
    it, git is asked everything each time).
    """
    memory = memory or CheckpointMemory()
    try:
        if branch is None:
            return await _commit_on_head(workdir, iteration, staged, memory)
        if isinstance(staged, Awaitable):
            staged = await staged
        await _check_branch_name(workdir, branch)
        if await _current_branch(workdir) == branch:
            return await _commit_on_head(workdir, iteration, staged, memory)
        return await _commit_on_branch(workdir, iteration, branch, staged, memory)
    except (GitError, IndexLocked) as exc:
        return CheckpointOutcome(error=str(exc))


async def commit_exists(workdir: Path, sha: str) -> bool:
    """Whether commit ``sha`` is (still) in the work dir's repository."""
    code, _, _ = await _git(workdir, "cat-file", "-e", f"{sha}^{{commit}}")
    return code == 0


async def branch_at(workdir: Path, name: str, sha: str) -> str:
    """Create branch ``name`` at commit ``sha`` and return its name; an existing one is refused."""
    await _check_branch_name(workdir, name)
    if await _rev(workdir, f"refs/heads/{name}") is not None:
        raise GitError(f"branch {name!r} already exists: choose another name")
    await _must(workdir, "branch", "--no-track", name, sha)
    return name


async def uncommitted_changes(workdir: Path) -> str:
    """What ``restore`` would discard: ``git status --short`` and ``git diff --stat`` of the
    work dir against HEAD; empty when there is nothing."""
    status = await _must(workdir, "status", "--short", "--untracked-files=all", "--", ".")
    if not status.strip():
        return ""
    code, stat, _ = await _git(workdir, "diff", "--stat", "HEAD", "--", ".")
    return status.rstrip("\n") + ("\n\n" + stat.rstrip("\n") if code == 0 and stat else "")


async def restore(workdir: Path, sha: str) -> None:
    """Make the work dir's files and index entries exactly those of commit ``sha``.

    Tracked files are restored or removed, untracked ones removed (ignored files are kept);
    HEAD does not move, so ``git status`` then shows the checkpoint as staged changes.
    """
    await _must(workdir, "restore", f"--source={sha}", "--staged", "--worktree", "--", ".")
    await _must(workdir, "clean", "-f", "-d", "-q", "--", ".")


# -- committing -----------------------------------------------------------------------------


async def _commit_on_head(
    workdir: Path,
    iteration: int,
    staged: StagedTree | Awaitable[StagedTree | None] | None,
    memory: CheckpointMemory,
) -> CheckpointOutcome:
    """Commit the staged tree on HEAD; the user's index becomes the staged copy.

    HEAD is read while the tree is written, unless ``memory`` knows it: then the commit is made
    on the remembered one, and only when ``update-ref`` finds HEAD elsewhere (or nothing seems
    to have changed) is HEAD read and the decision taken again on it."""
    remembered = memory.head()
    if remembered is None:
        head, ready = await _head_and(workdir, staged)
    else:
        head, ready = remembered, (await staged if isinstance(staged, Awaitable) else staged)
    with _scratch() as scratch, IndexLock(head.index) as lock:
        if ready is None or ready.user_index != head.index or not ready.current():
            ready = await _stage(workdir, head.index, scratch)
        if remembered is not None:
            if ready.tree != remembered.tree:
                try:
                    return await _commit(workdir, iteration, ready, remembered, lock, memory)
                except GitError:
                    head = await _head(workdir)
                    if head.commit == remembered.commit:
                        raise
            else:
                head = await _head(workdir)
        if ready.tree == head.tree:
            return CheckpointOutcome(skipped="nothing changed since the last commit")
        return await _commit(workdir, iteration, ready, head, lock, memory)


async def _commit(
    workdir: Path,
    iteration: int,
    ready: StagedTree,
    head: Head,
    lock: IndexLock,
    memory: CheckpointMemory,
) -> CheckpointOutcome:
    """Commit ``ready``'s tree on ``head``; move HEAD to it (if HEAD is still ``head``) with the
    user's index becoming ``ready``'s."""
    sha = await _commit_tree(workdir, ready.tree, head.commit, iteration, memory)
    lock.install(ready.index)  # the index of the commit, before HEAD moves (as git does)
    reflog = f"ralphctl: {checkpoint_message(iteration)}"
    await _must(workdir, "update-ref", "-m", reflog, "HEAD", sha, head.commit or "")
    lock.commit()
    memory.left(Head(head.index, sha, ready.tree))
    return CheckpointOutcome(sha=sha)


async def _commit_on_branch(
    workdir: Path,
    iteration: int,
    branch: str,
    staged: StagedTree | None,
    memory: CheckpointMemory,
) -> CheckpointOutcome:
    ref = f"refs/heads/{branch}"
    elsewhere = await _worktree_with(workdir, ref)
    if elsewhere is not None:
        raise GitError(f"branch {branch!r} is checked out in {elsewhere}: cannot commit to it")
    with _scratch() as scratch:
        if staged is None or not staged.current():
            index = workdir / (await _must(workdir, "rev-parse", "--git-path", "index")).strip()
            staged = await _stage(workdir, index, scratch)
        old = await _rev(workdir, ref)
        parent = old or await _rev(workdir, "HEAD")
        if parent is not None and await _rev(workdir, f"{parent}^{{tree}}") == staged.tree:
            return CheckpointOutcome(skipped=f"nothing changed since {branch}'s last commit")
        sha = await _commit_tree(workdir, staged.tree, parent, iteration, memory)
    reflog = f"ralphctl: {checkpoint_message(iteration)}"
    await _must(workdir, "update-ref", "-m", reflog, ref, sha, old or "")
    return CheckpointOutcome(sha=sha)


async def _head(workdir: Path) -> Head:
    code, out, err = await _git(workdir, "rev-parse", "--git-path", "index", "HEAD", "HEAD^{tree}")
    lines = out.splitlines()
    if not lines:
        raise GitError(f"git rev-parse failed: {err.strip()}")
    index = workdir / lines[0]
    if code != 0:  # an unborn branch: update-ref then requires that it still does not exist
        return Head(index, None, None)
    return Head(index, lines[1], lines[2])


async def _head_and(
    workdir: Path, staged: StagedTree | Awaitable[StagedTree | None] | None
) -> tuple[Head, StagedTree | None]:
    """``_head`` and ``staged``, awaited at once when it is still to be written (two git
    commands side by side; an error is raised once both are done)."""
    if not isinstance(staged, Awaitable):
        return await _head(workdir), staged
    head, tree = await asyncio.gather(_head(workdir), staged, return_exceptions=True)
    if isinstance(head, BaseException):
        raise head
    if isinstance(tree, BaseException):
        raise tree
    return head, tree


async def _stage(workdir: Path, user_index: Path, scratch: Path) -> StagedTree:
    """Stage the work dir into a copy of the user's index (in ``scratch``) and write its tree."""
    index = scratch / "index"
    base = signature(user_index)
    if user_index.is_file():
        copy_index(user_index, index)
    env = {"GIT_INDEX_FILE": str(index)}
    await _must(workdir, "add", "-A", "--", ".", env=env)
    tree = (await _must(workdir, "write-tree", env=env)).strip()
    return StagedTree(tree, index, user_index, base)


async def _commit_tree(
    workdir: Path, tree: str, parent: str | None, iteration: int, memory: CheckpointMemory
) -> str:
    """A commit of ``tree`` on ``parent``, signed when the user's ``commit.gpgSign`` says so."""
    sign = await memory.sign_flags(workdir)
    parents = ["-p", parent] if parent is not None else []
    message = checkpoint_message(iteration)
    return (await _must(workdir, "commit-tree", *sign, tree, *parents, "-m", message)).strip()


@contextmanager
def _scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ralphctl-index-") as scratch:
        yield Path(scratch)


# -- asking git -----------------------------------------------------------------------------


async def _check_branch_name(workdir: Path, name: str) -> None:
    code, out, _ = await _git(workdir, "check-ref-format", "--branch", name)
    if code != 0 or out.strip() != name:
        raise GitError(f"{name!r} is not a valid branch name")


async def _current_branch(workdir: Path) -> str | None:
    code, out, _ = await _git(workdir, "symbolic-ref", "-q", "--short", "HEAD")
    return out.strip() if code == 0 else None


async def _worktree_with(workdir: Path, ref: str) -> str | None:
    """The work tree (of this repository) that has ``ref`` checked out, if any."""
    path = None
    for line in (await _must(workdir, "worktree", "list", "--porcelain")).splitlines():
        if line.startswith("worktree "):
            path = line.removeprefix("worktree ")
        elif line == f"branch {ref}":
            return path
    return None


async def _rev(workdir: Path, name: str) -> str | None:
    code, out, _ = await _git(workdir, "rev-parse", "-q", "--verify", name)
    return out.strip() if code == 0 else None


async def _must(workdir: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Git's output, or GitError with its message."""
    code, out, err = await _git(workdir, *args, env=env)
    if code != 0:
        raise GitError(f"git {args[0]} failed: {(err or out).strip()}")
    return out


async def _git(
    workdir: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Git's exit status, output and error output. It runs in a worker thread: measured cheaper
    than an asyncio subprocess (no child-watcher thread per spawn; see engine/progress.py)."""
    try:
        done = await asyncio.to_thread(
            subprocess.run,
            ["git", *args],
            cwd=workdir,
            env={**os.environ, **env} if env else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:  # subprocess.run has killed and reaped it
        return 124, "", f"git {args[0]} timed out after {GIT_TIMEOUT_S:.0f}s"
    except OSError as exc:
        return 127, "", f"cannot run git: {exc.strerror or exc}"
    out, err = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    return done.returncode, out, err
