"""Git checkpoints: commit the work tree every N iterations; go back to one.

On the current branch: ``git add -A .`` (so .gitignore is respected and ``.ralph/`` — ignored by
its own .gitignore — is never committed) and ``git commit``. On a configured branch: the same
snapshot is staged in a temporary index and committed with plumbing (``write-tree``,
``commit-tree``, a compare-and-swap ``update-ref``), so the user's HEAD, index and files are
never touched. No reset, no force, no history rewrite.

Going back: ``branch_at`` makes a new branch at a checkpoint (loses nothing); ``restore``
puts a checkpoint's files into the work dir (HEAD stays where it is) and is the one
operation here that discards changes: callers show ``uncommitted_changes`` first.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

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


async def is_git_work_tree(workdir: Path) -> bool:
    code, out, _ = await _git(workdir, "rev-parse", "--is-inside-work-tree")
    return code == 0 and out.strip() == "true"


async def create_checkpoint(
    workdir: Path, iteration: int, *, branch: str | None = None
) -> CheckpointOutcome:
    """Commit everything under ``workdir``; skip when nothing changed. Errors are returned.

    With ``branch`` the commit goes to that branch (created from HEAD when missing) and the
    work tree, index and HEAD are left alone; a branch that is checked out here is committed
    to the ordinary way.
    """
    if branch is None:
        return await _commit_on_head(workdir, iteration)
    try:
        await _check_branch_name(workdir, branch)
        if await _current_branch(workdir) == branch:
            return await _commit_on_head(workdir, iteration)
        return await _commit_on_branch(workdir, iteration, branch)
    except GitError as exc:
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


async def _commit_on_head(workdir: Path, iteration: int) -> CheckpointOutcome:
    """Stage everything under ``workdir`` and commit it on the current branch."""
    code, _, err = await _git(workdir, "add", "-A", "--", ".")
    if code != 0:
        return CheckpointOutcome(error=f"git add failed: {err.strip()}")
    code, _, _ = await _git(workdir, "diff", "--cached", "--quiet")
    if code == 0:
        return CheckpointOutcome(skipped="nothing changed since the last commit")
    code, out, err = await _git(workdir, "commit", "-q", "-m", checkpoint_message(iteration))
    if code != 0:
        return CheckpointOutcome(error=f"git commit failed: {(err or out).strip()}")
    code, out, err = await _git(workdir, "rev-parse", "HEAD")
    if code != 0:
        return CheckpointOutcome(error=f"git rev-parse failed: {err.strip()}")
    return CheckpointOutcome(sha=out.strip())


async def _commit_on_branch(workdir: Path, iteration: int, branch: str) -> CheckpointOutcome:
    ref = f"refs/heads/{branch}"
    elsewhere = await _worktree_with(workdir, ref)
    if elsewhere is not None:
        raise GitError(f"branch {branch!r} is checked out in {elsewhere}: cannot commit to it")
    tree = await _snapshot_tree(workdir)
    old = await _rev(workdir, ref)
    parent = old or await _rev(workdir, "HEAD")
    if parent is not None and await _rev(workdir, f"{parent}^{{tree}}") == tree:
        return CheckpointOutcome(skipped=f"nothing changed since {branch}'s last commit")
    parents = ["-p", parent] if parent is not None else []
    message = checkpoint_message(iteration)
    sha = (await _must(workdir, "commit-tree", tree, *parents, "-m", message)).strip()
    reflog = f"ralphctl: {message}"
    await _must(workdir, "update-ref", "-m", reflog, ref, sha, old or "")
    return CheckpointOutcome(sha=sha)


async def _snapshot_tree(workdir: Path) -> str:
    """The tree of the index with everything under ``workdir`` staged, from a copy of the index."""
    index = workdir / (await _must(workdir, "rev-parse", "--git-path", "index")).strip()
    with tempfile.TemporaryDirectory(prefix="ralphctl-index-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        if index.is_file():
            shutil.copyfile(index, env["GIT_INDEX_FILE"])
        await _must(workdir, "add", "-A", "--", ".", env=env)
        return (await _must(workdir, "write-tree", env=env)).strip()


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
    try:
        process = await asyncio.create_subprocess_exec(
            "git",
            *args,
            cwd=workdir,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **env} if env else None,
        )
    except OSError as exc:
        return 127, "", f"cannot run git: {exc.strerror or exc}"
    try:
        out, err = await asyncio.wait_for(process.communicate(), GIT_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        return 124, "", f"git {args[0]} timed out after {GIT_TIMEOUT_S:.0f}s"
    code = process.returncode if process.returncode is not None else 1
    return code, out.decode(errors="replace"), err.decode(errors="replace")
