"""Git checkpoints: commit the work tree every N iterations. Never destructive.

Only ``git add -A .`` (so .gitignore is respected and ``.ralph/`` — ignored by its own
.gitignore — is never committed) and ``git commit``: no reset, no force, no history rewrite.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class CheckpointOutcome:
    """``sha`` when a commit was made; otherwise ``skipped`` or ``error`` says why not."""

    sha: str | None = None
    skipped: str | None = None
    error: str | None = None


def checkpoint_message(iteration: int) -> str:
    return f"[ralph] Checkpoint iteration {iteration}"


async def is_git_work_tree(workdir: Path) -> bool:
    code, out, _ = await _git(workdir, "rev-parse", "--is-inside-work-tree")
    return code == 0 and out.strip() == "true"


async def create_checkpoint(workdir: Path, iteration: int) -> CheckpointOutcome:
    """Stage everything under ``workdir`` and commit it; skip when nothing changed."""
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


async def _git(workdir: Path, *args: str) -> tuple[int, str, str]:
    try:
        process = await asyncio.create_subprocess_exec(
            "git",
            *args,
            cwd=workdir,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
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
