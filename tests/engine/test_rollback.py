"""Rollback's rules, without the command line: which checkpoint, and what may be lost."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from ralphctl.engine.checkpoint import create_checkpoint
from ralphctl.engine.rollback import (
    RollbackRefused,
    UncommittedChanges,
    branch_to,
    find_target,
    restore_to,
)
from ralphctl.store.errors import LoopNotFound
from ralphctl.store.repository import Store
from tests.store.factories import new_loop

LOOP = "a1b2c3d4e5f6"


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def store(tmp_path: Path):
    repo = tmp_path / "work"
    repo.mkdir()
    for args in (["init", "-q"], ["config", "user.name", "t"], ["config", "user.email", "t@t"]):
        git(repo, *args)
    (repo / "app.py").write_text("v = 0\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial")
    with Store.open(str(tmp_path / "ralphctl.db")) as opened:
        opened.create_loop(new_loop(LOOP, workdir=str(repo)))
        for n in (2, 4):
            (repo / "app.py").write_text(f"v = {n}\n")
            sha = asyncio.run(create_checkpoint(repo, n)).sha
            assert sha is not None
            opened.add_checkpoint(LOOP, n, sha, {"iteration": n})
        yield opened


def test_a_missing_checkpoint_names_those_there_are(store: Store) -> None:
    with pytest.raises(RollbackRefused, match="no checkpoint at iteration 3; it has: 2, 4"):
        asyncio.run(find_target(store, LOOP[:6], 3))


def test_an_unknown_loop_is_not_found(store: Store) -> None:
    with pytest.raises(LoopNotFound):
        asyncio.run(find_target(store, "ffffff", 2))


def test_the_default_branch_is_named_after_the_loop_and_iteration(store: Store) -> None:
    target = asyncio.run(find_target(store, LOOP, 2))

    made = asyncio.run(branch_to(target))

    assert made.name == f"ralph/{LOOP}/iteration-2"
    assert git(target.workdir, "rev-parse", made.name).strip() == target.checkpoint.commit_sha
    with pytest.raises(RollbackRefused):  # an existing branch is never moved
        asyncio.run(branch_to(target))


def test_a_restore_over_uncommitted_changes_needs_force(store: Store) -> None:
    target = asyncio.run(find_target(store, LOOP, 2))
    (target.workdir / "app.py").write_text("v = 'mine'\n")

    with pytest.raises(UncommittedChanges) as refused:
        asyncio.run(restore_to(target, force=False))
    assert "app.py" in refused.value.changes
    assert (target.workdir / "app.py").read_text() == "v = 'mine'\n"

    asyncio.run(restore_to(target, force=True))
    assert (target.workdir / "app.py").read_text() == "v = 2\n"
