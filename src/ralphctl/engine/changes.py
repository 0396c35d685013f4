"""What an agent may have changed in a work dir, in words, for a loop that ended before it
could be recorded: ``git status --short`` (at most 20 lines), never reverted."""

from __future__ import annotations

from pathlib import Path

from ralphctl.engine.checkpoint import GitError, is_git_work_tree, uncommitted_changes

MAX_LINES = 20


async def changes_summary(workdir: Path) -> str:
    """One paragraph: the uncommitted changes in ``workdir``, or why they cannot be listed."""
    if not await is_git_work_tree(workdir):
        return f"{workdir} is not a git work tree: check by hand what the agent changed there."
    try:
        status = await uncommitted_changes(workdir)
    except GitError as exc:
        return f"`git status` failed in {workdir} ({exc}): check what the agent changed there."
    lines = status.partition("\n\n")[0].splitlines()
    if not lines:
        return f"git status shows no uncommitted changes in {workdir}."
    shown = "\n".join(lines[:MAX_LINES])
    more = f"\n… and {len(lines) - MAX_LINES} more" if len(lines) > MAX_LINES else ""
    return f"Uncommitted changes in {workdir} (git status --short):\n{shown}{more}"
