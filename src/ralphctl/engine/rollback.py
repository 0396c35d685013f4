"""Going back to a loop's checkpoint, by default without losing anything.

The rules of ``ralphctl rollback``: the checkpoint must exist (the latest of its iteration
counts), the loop's work dir must still be a git work tree holding its commit. Going back
makes a new branch at the checkpoint (nothing else changes); restoring puts the checkpoint's
files into the work dir instead (HEAD stays) and is refused over uncommitted changes unless
forced, which discards them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ralphctl.engine.checkpoint import (
    GitError,
    branch_at,
    commit_exists,
    is_git_work_tree,
    restore,
    uncommitted_changes,
)
from ralphctl.store.records import CheckpointRecord

if TYPE_CHECKING:
    from ralphctl.store.repository import Store


class RollbackRefused(ValueError):
    """Nothing was done; the message says why."""


class UncommittedChanges(RollbackRefused):
    """A restore would discard ``changes`` in ``workdir`` (``git status --short``, ``--stat``)."""

    def __init__(self, workdir: Path, changes: str) -> None:
        self.workdir = workdir
        self.changes = changes
        super().__init__(
            "nothing was changed: a restore would discard these changes. Commit or stash "
            "them, or add --force to discard them"
        )


class RollbackFailed(RuntimeError):
    """git failed part-way through a restore: the work dir may be partly restored."""


@dataclass(frozen=True, slots=True)
class Target:
    """The checkpoint to go back to, and the work dir it belongs to."""

    loop_id: str
    workdir: Path
    checkpoint: CheckpointRecord


@dataclass(frozen=True, slots=True)
class Branched:
    name: str
    uncommitted: bool  # the work dir has changes to commit or stash before switching


async def find_target(store: Store, loop_id: str, iteration: int) -> Target:
    """The (latest) checkpoint of ``iteration`` of the loop ``loop_id`` names (or a prefix),
    in a work dir that still has its commit; RollbackRefused otherwise (LoopNotFound for an
    unknown loop)."""
    loop = store.get_loop(loop_id)
    checkpoints = store.checkpoints(loop.id)
    matching = [c for c in checkpoints if c.iteration == iteration]
    if not matching:
        available = ", ".join(str(i) for i in sorted({c.iteration for c in checkpoints}))
        raise RollbackRefused(
            f"loop {loop.id} has no checkpoint at iteration {iteration}; "
            f"it has: {available or 'none'}"
        )
    checkpoint = matching[-1]
    workdir = Path(loop.workdir)
    if not workdir.is_dir() or not await is_git_work_tree(workdir):
        raise RollbackRefused(f"the loop's work dir {workdir} is not a git work tree (any more)")
    if not await commit_exists(workdir, checkpoint.commit_sha):
        raise RollbackRefused(
            f"the commit of checkpoint {iteration}, {checkpoint.commit_sha}, is no longer in the "
            f"repository of {workdir}"
        )
    return Target(loop.id, workdir, checkpoint)


def default_branch(target: Target) -> str:
    return f"ralph/{target.loop_id}/iteration-{target.checkpoint.iteration}"


async def branch_to(target: Target, name: str | None = None) -> Branched:
    """A new branch at the checkpoint (``default_branch`` unless named); an existing branch
    is never moved (RollbackRefused)."""
    name = name or default_branch(target)
    try:
        await branch_at(target.workdir, name, target.checkpoint.commit_sha)
    except GitError as exc:
        raise RollbackRefused(str(exc)) from None
    return Branched(name, bool(await uncommitted_changes(target.workdir)))


async def uncommitted(target: Target) -> str:
    """What a restore would discard (empty: nothing)."""
    return await uncommitted_changes(target.workdir)


async def restore_to(target: Target, *, force: bool) -> None:
    """Make the work dir's files the checkpoint's (HEAD stays). Over uncommitted changes only
    with ``force`` (UncommittedChanges otherwise); RollbackFailed if git fails part-way."""
    changes = await uncommitted_changes(target.workdir)
    if changes and not force:
        raise UncommittedChanges(target.workdir, changes)
    try:
        await restore(target.workdir, target.checkpoint.commit_sha)
    except GitError as exc:
        raise RollbackFailed(f"{exc}; the work dir may be partly restored") from None
