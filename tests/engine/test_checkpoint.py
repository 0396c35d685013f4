import asyncio
import subprocess
from pathlib import Path

import pytest

from ralphctl.engine.checkpoint import create_checkpoint, is_git_work_tree
from ralphctl.engine.statefile import ralph_dir


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.name", "t")
    git(tmp_path, "config", "user.email", "t@example.invalid")
    (tmp_path / "README").write_text("hello\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "initial")
    return tmp_path


def test_a_checkpoint_commits_every_change_with_the_ralph_message(repo):
    (repo / "new.py").write_text("x = 1\n")
    (repo / "README").write_text("changed\n")
    outcome = asyncio.run(create_checkpoint(repo, 5))
    assert outcome.sha == git(repo, "rev-parse", "HEAD")
    assert git(repo, "log", "-1", "--format=%s") == "[ralph] Checkpoint iteration 5"
    assert git(repo, "status", "--porcelain") == ""


def test_gitignored_files_and_the_ralph_dir_are_never_committed(repo):
    (repo / ".gitignore").write_text("secret.env\n")
    (repo / "secret.env").write_text("TOKEN=x\n")
    (ralph_dir(repo) / "state.json").write_text("{}")
    asyncio.run(create_checkpoint(repo, 1))
    committed = git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert committed == [".gitignore"]


def test_no_change_means_no_empty_commit(repo):
    before = git(repo, "rev-parse", "HEAD")
    outcome = asyncio.run(create_checkpoint(repo, 2))
    assert outcome.sha is None
    assert outcome.skipped
    assert git(repo, "rev-parse", "HEAD") == before


def test_a_failing_commit_is_reported_not_raised(repo):
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'lint failed' >&2\nexit 1\n")
    hook.chmod(0o755)
    (repo / "a.txt").write_text("a\n")
    outcome = asyncio.run(create_checkpoint(repo, 3))
    assert outcome.sha is None
    assert "git commit failed" in (outcome.error or "")
    assert "lint failed" in (outcome.error or "")


def test_a_plain_directory_is_not_a_work_tree(tmp_path, repo):
    plain = tmp_path.parent / (tmp_path.name + "-plain")
    plain.mkdir()
    assert not asyncio.run(is_git_work_tree(plain))
    assert asyncio.run(is_git_work_tree(repo))
