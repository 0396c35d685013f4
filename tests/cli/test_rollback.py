"""`ralphctl rollback`: back to a checkpoint in a real git repository, losing nothing by default."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from ralphctl.cli.rollback import rollback_command
from ralphctl.engine.checkpoint import create_checkpoint
from ralphctl.engine.statefile import ralph_dir
from ralphctl.store.repository import Store
from tests.store.factories import new_loop

LOOP = "3f2a9c1d0b7e"


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def files(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): path.read_text()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".git" not in path.parts
    }


def user_state(repo: Path) -> tuple[str, str, bytes, dict[str, str]]:
    """HEAD, git status, the index file and every file: all a rollback could lose."""
    index = (repo / ".git" / "index").read_bytes()
    return git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), index, files(repo)


class Loop:
    """A loop that checkpointed iterations 5 and 10 of its work dir, then left it dirty."""

    def __init__(self, tmp_path: Path) -> None:
        self.db = str(tmp_path / "ralphctl.db")
        self.repo = tmp_path / "work"
        self.repo.mkdir()
        git(self.repo, "init", "-q")
        git(self.repo, "config", "user.name", "t")
        git(self.repo, "config", "user.email", "t@example.invalid")
        (self.repo / ".gitignore").write_text("build/\n")
        (self.repo / "README").write_text("hello\n")
        git(self.repo, "add", ".")
        git(self.repo, "commit", "-q", "-m", "initial")
        with Store.open(self.db) as store:
            store.create_loop(new_loop(LOOP, workdir=str(self.repo)))
            self.at_5 = self.checkpoint(store, 5, {"app.py": "v = 5\n", "README": "five\n"})
            self.files_at_5 = files(self.repo)
            self.at_10 = self.checkpoint(store, 10, {"app.py": "v = 10\n", "extra.py": "x\n"})
        (self.repo / "app.py").write_text("v = 'dirty'\n")
        (self.repo / "scratch.py").write_text("untracked\n")
        (self.repo / "build").mkdir()
        (self.repo / "build" / "out.bin").write_text("ignored\n")
        (ralph_dir(self.repo) / "state.json").write_text("{}")

    def checkpoint(self, store: Store, n: int, changes: dict[str, str]) -> str:
        for name, text in changes.items():
            (self.repo / name).write_text(text)
        sha = asyncio.run(create_checkpoint(self.repo, n)).sha
        assert sha is not None
        store.add_checkpoint(LOOP, n, sha, {"iteration": n})
        return sha

    def rollback(self, *args: str) -> Result:
        app = typer.Typer()
        app.command()(rollback_command)
        return CliRunner().invoke(app, [*args, "--db", self.db])


def said(result: Result) -> str:
    """What the command wrote to stderr, as one line (the console wraps long lines)."""
    return " ".join(result.stderr.split())


@pytest.fixture
def loop(tmp_path: Path) -> Loop:
    return Loop(tmp_path)


def test_rollback_makes_a_branch_at_the_checkpoint_and_loses_nothing(loop):
    before = user_state(loop.repo)

    result = loop.rollback(LOOP, "--to", "5")

    assert result.exit_code == 0, result.output
    assert git(loop.repo, "rev-parse", f"ralph/{LOOP}/iteration-5") == loop.at_5
    assert user_state(loop.repo) == before
    assert f"git switch ralph/{LOOP}/iteration-5" in result.stdout


def test_the_branch_can_be_named_and_the_loop_given_by_a_prefix(loop):
    result = loop.rollback(LOOP[:6], "--to", "10", "--branch", "before-cleanup")

    assert result.exit_code == 0, result.output
    assert git(loop.repo, "rev-parse", "before-cleanup") == loop.at_10


def test_an_existing_branch_is_never_moved(loop):
    git(loop.repo, "branch", "taken")
    tip = git(loop.repo, "rev-parse", "taken")

    result = loop.rollback(LOOP, "--to", "5", "--branch", "taken")

    assert result.exit_code == 2
    assert "branch 'taken' already exists" in said(result)
    assert git(loop.repo, "rev-parse", "taken") == tip


def test_a_missing_checkpoint_lists_the_ones_there_are(loop):
    result = loop.rollback(LOOP, "--to", "7")

    assert result.exit_code == 2
    assert f"loop {LOOP} has no checkpoint at iteration 7; it has: 5, 10" in said(result)


def test_an_unknown_loop_is_a_usage_error(loop):
    result = loop.rollback("ffffffff", "--to", "5")

    assert result.exit_code == 2
    assert "no loop with id 'ffffffff'" in said(result)


def test_a_work_dir_that_is_no_git_work_tree_is_a_usage_error(loop, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    with Store.open(loop.db) as store:
        store.create_loop(new_loop("plain-loop", workdir=str(plain)))
        store.add_checkpoint("plain-loop", 5, loop.at_5, {})

    result = loop.rollback("plain-loop", "--to", "5")

    assert result.exit_code == 2
    assert "is not a git work tree" in said(result)


def test_a_checkpoint_whose_commit_is_gone_is_a_usage_error(loop):
    with Store.open(loop.db) as store:
        store.add_checkpoint(LOOP, 15, "0" * 40, {})

    result = loop.rollback(LOOP, "--to", "15", "--force")

    assert result.exit_code == 2
    assert f"{'0' * 40}, is no longer in the repository" in said(result)


def test_a_restore_over_uncommitted_changes_is_refused_and_lists_them(loop):
    before = user_state(loop.repo)

    result = loop.rollback(LOOP, "--to", "5", "--restore")

    assert result.exit_code == 2
    assert " M app.py" in result.stderr
    assert "?? scratch.py" in result.stderr
    assert "nothing was changed" in said(result)
    assert "add --force to discard them" in said(result)
    assert user_state(loop.repo) == before


def test_force_shows_what_is_lost_then_restores_the_checkpoint_exactly(loop):
    head = git(loop.repo, "rev-parse", "HEAD")

    result = loop.rollback(LOOP, "--to", "5", "--force")

    assert result.exit_code == 0, result.output
    assert "Discarding uncommitted changes" in said(result)
    assert " M app.py" in result.stderr
    assert files(loop.repo) == {
        **loop.files_at_5,  # app.py and README back; extra.py and scratch.py gone
        "build/out.bin": "ignored\n",  # ignored files are kept
        ".ralph/.gitignore": (ralph_dir(loop.repo) / ".gitignore").read_text(),
        ".ralph/state.json": "{}",
    }
    assert git(loop.repo, "rev-parse", "HEAD") == head
    assert git(loop.repo, "diff", "--cached", "--stat", loop.at_5) == ""  # index = checkpoint


def test_a_clean_work_tree_is_restored_without_force(loop):
    git(loop.repo, "stash", "-q", "--include-untracked")

    result = loop.rollback(LOOP, "--to", "5", "--restore")

    assert result.exit_code == 0, result.output
    assert (loop.repo / "app.py").read_text() == "v = 5\n"
    assert not (loop.repo / "extra.py").exists()


def test_branch_and_restore_do_not_mix(loop):
    result = loop.rollback(LOOP, "--to", "5", "--restore", "--branch", "x")

    assert result.exit_code == 2
