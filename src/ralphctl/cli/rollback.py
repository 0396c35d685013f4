"""`ralphctl rollback`: go back to a loop's checkpoint (the rules: ``engine/rollback``)."""

from __future__ import annotations

import asyncio

import typer
from rich.markup import escape

from ralphctl.cli.common import console, err_console, fail, open_store
from ralphctl.cli.run import DB
from ralphctl.domain.states import EXIT_FAILED, EXIT_USAGE
from ralphctl.engine.rollback import (
    RollbackFailed,
    RollbackRefused,
    Target,
    UncommittedChanges,
    branch_to,
    find_target,
    restore_to,
    uncommitted,
)
from ralphctl.store.errors import LoopNotFound


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
    try:
        target = asyncio.run(find_target(open_store(db), loop_id, to))
        if restoring:
            asyncio.run(_restore(target, force))
        else:
            asyncio.run(_branch(target, branch))
    except UncommittedChanges as exc:
        err_console.print(f"Uncommitted changes in {escape(str(exc.workdir))}:")
        err_console.print(f"{escape(exc.changes)}\n")
        fail(str(exc), EXIT_USAGE)
    except (LoopNotFound, RollbackRefused) as exc:
        fail(str(exc), EXIT_USAGE)
    except RollbackFailed as exc:
        fail(str(exc), EXIT_FAILED)


async def _branch(target: Target, name: str | None) -> None:
    made = await branch_to(target, name)
    sha = target.checkpoint.commit_sha
    console.print(
        f"Created branch [bold]{escape(made.name)}[/] at {sha[:12]} "
        f"(checkpoint of iteration {target.checkpoint.iteration}). Nothing else changed.\n"
        f"Switch to it with: git switch {escape(made.name)}"
    )
    if made.uncommitted:
        console.print("(commit or stash your uncommitted changes first)")


async def _restore(target: Target, force: bool) -> None:
    lost = await uncommitted(target) if force else ""
    if lost:
        err_console.print(f"Discarding uncommitted changes:\n{escape(lost)}\n")
    await restore_to(target, force=force)
    console.print(
        f"Restored {escape(str(target.workdir))} to the checkpoint of iteration "
        f"{target.checkpoint.iteration} ({target.checkpoint.commit_sha[:12]}). HEAD did not "
        "move: `git status` shows the difference as staged changes."
    )
