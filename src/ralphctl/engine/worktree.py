"""A git worktree per loop, so that several loops can work on one repository at once.

``git worktree add -b ralph/<loop id> <repo>-ralph-<loop id>`` from the repository's HEAD: a
sibling directory on a new branch. ralphctl never removes it; merge the branch, then
``git worktree remove <dir>``.
"""

from __future__ import annotations

from pathlib import Path

from ralphctl.engine.checkpoint import GitError, _must, is_git_work_tree


def worktree_path(repo: Path, loop_id: str) -> Path:
    return repo.parent / f"{repo.name}-ralph-{loop_id}"


def worktree_branch(loop_id: str) -> str:
    return f"ralph/{loop_id}"


async def add_worktree(repo: Path, loop_id: str) -> Path:
    """Create the loop's worktree; GitError (fit for the user) when it cannot be made."""
    if not await is_git_work_tree(repo):
        raise GitError(f"{repo} is not a git work tree: a worktree per loop needs one")
    path = worktree_path(repo, loop_id)
    await _must(repo, "worktree", "add", "-q", "-b", worktree_branch(loop_id), str(path), "HEAD")
    return path
