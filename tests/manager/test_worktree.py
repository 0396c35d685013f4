"""A git worktree per loop: several loops on one repository, each on its own branch."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ralphctl.domain.states import LoopStatus
from ralphctl.engine.manager import InvalidSpec, LoopManager
from ralphctl.engine.worktree import worktree_branch, worktree_path
from ralphctl.store.records import LoopRecord
from tests.manager.conftest import DONE, run, spec, until


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(new_workdir: Callable[[], Path]) -> Path:
    root = new_workdir()
    git(root, "init", "-q")
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.invalid")
    git(root, "commit", "-q", "--allow-empty", "-m", "initial")
    return root


def test_loops_with_worktrees_share_a_repository_each_on_its_own_branch(db, repo):
    step = {**DONE, "edits": [{"path": "out.txt", "content": "mine"}]}

    async def scenario() -> list[LoopRecord]:
        manager = LoopManager(db)
        await manager.start()
        loops = [await manager.create(spec(repo, step, worktree=True)) for _ in range(2)]
        await until(lambda: not manager.running_ids)
        await manager.close()
        return [manager.get(loop.id) for loop in loops]

    loops = run(scenario())
    for loop in loops:
        assert loop.status is LoopStatus.COMPLETED
        assert Path(loop.workdir) == worktree_path(repo, loop.id)
        assert (Path(loop.workdir) / "out.txt").read_text() == "mine"
        assert git(Path(loop.workdir), "branch", "--show-current") == worktree_branch(loop.id)
    assert not (repo / "out.txt").exists()  # the repository's own work tree is untouched


def test_a_worktree_needs_a_git_repository(db, new_workdir):
    async def scenario() -> None:
        manager = LoopManager(db)
        await manager.start()
        try:
            with pytest.raises(InvalidSpec, match="not a git work tree"):
                await manager.create(spec(new_workdir(), DONE, worktree=True))
        finally:
            await manager.close()

    run(scenario())
    assert db.list_loops() == []
