"""Did an iteration change anything? The git tree of the whole work dir, before and after.

The tree is written from a throw-away copy of the index after ``git add -A``, so it covers
tracked edits, new untracked files and their contents, and commits alike, while ignored files
(``.ralph/`` among them) do not count. The user's index, HEAD and files are never touched.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

GIT_TIMEOUT_S = 60.0


async def fingerprint(workdir: Path) -> str | None:
    """The tree id of ``workdir`` as it is now; None when git cannot tell."""
    index = await _git(workdir, "rev-parse", "--git-path", "index")
    if index is None:
        return None
    with tempfile.TemporaryDirectory(prefix="ralphctl-progress-") as scratch:
        temporary = Path(scratch) / "index"
        real = Path(index.strip())
        real = real if real.is_absolute() else workdir / real
        if real.exists():
            shutil.copyfile(real, temporary)
        env = {"GIT_INDEX_FILE": str(temporary)}
        if await _git(workdir, "add", "-A", "--", ".", env=env) is None:
            return None
        tree = await _git(workdir, "write-tree", env=env)
    return None if tree is None else tree.strip()


async def _git(workdir: Path, *args: str, env: dict[str, str] | None = None) -> str | None:
    try:
        process = await asyncio.create_subprocess_exec(
            "git",
            *args,
            cwd=workdir,
            env={**os.environ, **(env or {})},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError:
        return None
    try:
        out, _ = await asyncio.wait_for(process.communicate(), GIT_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        return None
    return out.decode(errors="replace") if process.returncode == 0 else None
