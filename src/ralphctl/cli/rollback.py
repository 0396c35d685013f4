"""`ralphctl rollback`: go back to a loop's checkpoint, by default without losing anything."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.markup import escape

from ralphctl.cli.common import console, err_console, fail, open_store
from ralphctl.cli.run import DB
from ralphctl.domain.states import EXIT_FAILED, EXIT_USAGE
from ralphctl.engine.checkpoint import (
    GitError,
    branch_at,
    commit_exists,
    is_git_work_tree,
    restore,
    uncommitted_changes,
)
from ralphctl.store.errors import LoopNotFound
from ralphctl.store.records import CheckpointRecord


def rollback_command(
    loop_id: str = typer.Argument(..., help="The loop's id (or a unique prefix)."),
    to: int = typer.Option(..., "--to", help="The iteration whose checkpoint to go back to."),
    branch: str | None = typer.Option(
        None, "--branch", help="Name of the new branch (ralph/<loop-id>/iteration-<N>)."
    ),
    restore_files: bool = typer.Option(
        False,
        "--restore",
        help="Put the checkpoint's files into the work dir instead (HEAD stays); refused "
        "when there are uncommitted changes, unless --force.",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Restore even over uncommitted changes (listed first); implies --restore.",
    ),
    db: str | None = DB,
) -> None:
    """Go back to the checkpoint of iteration N.

    By default a new branch is made at the checkpoint: nothing changes in the work dir and
    nothing is lost. With --restore (or --force) the work dir's files become the
    checkpoint's. Exit codes: 0 done, 2 nothing done (unknown loop or checkpoint, not a git
    work tree, branch exists, uncommitted changes without --force), 3 git failed mid-way.
    """
    restoring = restore_files or force
    if restoring and branch is not None:
        fail("--branch names a new branch; it does not go with --restore or --force", EXIT_USAGE)
    store = open_store(db)
    try:
        loop = store.get_loop(loop_id)
    except LoopNotFound as exc:
        fail(str(exc), EXIT_USAGE)
    checkpoint = _checkpoint(store.checkpoints(loop.id), loop.id, to)
    workdir = Path(loop.workdir)
    if not workdir.is_dir() or not asyncio.run(is_git_work_tree(workdir)):
        fail(f"the loop's work dir {workdir} is not a git work tree (any more)", EXIT_USAGE)
    if not asyncio.run(commit_exists(workdir, checkpoint.commit_sha)):
        fail(
            f"the commit of checkpoint {to}, {checkpoint.commit_sha}, is no longer in the "
            f"repository of {workdir}",
            EXIT_USAGE,
        )
    if restoring:
        asyncio.run(_restore(workdir, checkpoint, force))
    else:
        name = branch or f"ralph/{loop.id}/iteration-{to}"
        asyncio.run(_branch(workdir, checkpoint, name))


def _checkpoint(checkpoints: list[CheckpointRecord], loop_id: str, n: int) -> CheckpointRecord:
    """The (latest) checkpoint of iteration ``n``, or exit 2 naming the ones there are."""
    matching = [c for c in checkpoints if c.iteration == n]
    if not matching:
        available = ", ".join(str(i) for i in sorted({c.iteration for c in checkpoints}))
        fail(
            f"loop {loop_id} has no checkpoint at iteration {n}; it has: {available or 'none'}",
            EXIT_USAGE,
        )
    return matching[-1]


async def _branch(workdir: Path, checkpoint: CheckpointRecord, name: str) -> None:
    try:
        await branch_at(workdir, name, checkpoint.commit_sha)
    except GitError as exc:
        fail(str(exc), EXIT_USAGE)
    console.print(
        f"Created branch [bold]{escape(name)}[/] at {checkpoint.commit_sha[:12]} "
        f"(checkpoint of iteration {checkpoint.iteration}). Nothing else changed.\n"
        f"Switch to it with: git switch {escape(name)}"
    )
    if await uncommitted_changes(workdir):
        console.print("(commit or stash your uncommitted changes first)")


async def _restore(workdir: Path, checkpoint: CheckpointRecord, force: bool) -> None:
    lost = await uncommitted_changes(workdir)
    if lost and not force:
        err_console.print(f"Uncommitted changes in {escape(str(workdir))}:\n{escape(lost)}\n")
        fail(
            "nothing was changed: a restore would discard these changes. Commit or stash them, "
            "or add --force to discard them",
            EXIT_USAGE,
        )
    if lost:
        err_console.print(f"Discarding uncommitted changes:\n{escape(lost)}\n")
    try:
        await restore(workdir, checkpoint.commit_sha)
    except GitError as exc:
        fail(f"{exc}; the work dir may be partly restored", EXIT_FAILED)
    console.print(
        f"Restored {escape(str(workdir))} to the checkpoint of iteration {checkpoint.iteration} "
        f"({checkpoint.commit_sha[:12]}). HEAD did not move: `git status` shows the difference "
        "as staged changes."
    )
