"""What an agent may have changed, said when a loop ends before it could be recorded."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from ralphctl.engine.changes import MAX_LINES, changes_summary


def git_repository(path: Path) -> Path:
    for args in (["init", "-q"], ["config", "user.email", "t@t"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=path, check=True)
    return path


def test_outside_git_the_user_is_asked_to_look_by_hand(tmp_path: Path) -> None:
    said = asyncio.run(changes_summary(tmp_path))

    assert said == f"{tmp_path} is not a git work tree: check by hand what the agent changed there."


def test_a_clean_work_tree_says_so(tmp_path: Path) -> None:
    said = asyncio.run(changes_summary(git_repository(tmp_path)))

    assert said == f"git status shows no uncommitted changes in {tmp_path}."


def test_changes_are_listed_as_git_status_shows_them_and_capped(tmp_path: Path) -> None:
    git_repository(tmp_path)
    for i in range(MAX_LINES + 3):
        (tmp_path / f"file-{i:02}.txt").write_text("new\n")

    said = asyncio.run(changes_summary(tmp_path))

    lines = said.splitlines()
    assert lines[0] == f"Uncommitted changes in {tmp_path} (git status --short):"
    assert lines[1] == "?? file-00.txt"
    assert len(lines) == 1 + MAX_LINES + 1
    assert lines[-1] == "… and 3 more"
