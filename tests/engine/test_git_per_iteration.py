"""What the default path costs in git processes: a count per iteration, pinned (never a time).

Every git process is counted, whoever starts it: ``git`` on the PATH is a shim that logs its
subcommand and runs the real one. The budget is bench/overhead.py's (<= 10 ms per iteration on
a small repository), and each git process costs a few milliseconds of it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ralphctl.domain import defaults
from ralphctl.store.repository import Store
from tests.engine.test_runner import new_loop, run

ITERATIONS = 2 * defaults.CHECKPOINT_INTERVAL


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    for args in (["init", "-q"], ["config", "user.name", "t"], ["config", "user.email", "t@x"]):
        subprocess.run(["git", *args], cwd=path, check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "start"], cwd=path, check=True)
    return path


@pytest.fixture
def git_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file where every git process started from now on writes its subcommand."""
    real = shutil.which("git")
    assert real is not None
    shim = tmp_path / "shim"
    shim.mkdir()
    log = tmp_path / "git.log"
    (shim / "git").write_text(f'#!/bin/sh\necho "$1" >> "{log}"\nexec "{real}" "$@"\n')
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    return log


def test_an_iteration_costs_one_git_process_and_a_checkpoint_three_more(
    db: Store, repo: Path, git_log: Path
):
    steps: list[dict[str, Any]] = [
        {"edits": [{"path": "work.txt", "append": "x\n"}], "text": f"step {n}"}
        for n in range(ITERATIONS)
    ]
    loop, config = new_loop(
        db,
        repo,
        steps,
        max_iterations=ITERATIONS,
        checkpoint_interval=defaults.CHECKPOINT_INTERVAL,  # the default, which FAST turns off
    )

    run(db, loop, config)

    assert [c.iteration for c in db.checkpoints(loop.id)] == [5, 10]
    spawned = Counter(git_log.read_text().split())
    assert spawned == Counter(
        {
            "add": ITERATIONS + 1,  # one look per iteration, and the first look
            "write-tree": 2,  # one per checkpoint (the first look writes none)
            "rev-parse": 1 + 1 + 1,  # where the repository is; the first checkpoint's HEAD;
            # the last one's, which found nothing new to commit (HEAD read to be sure)
            "config": 1,  # commit.gpgSign, once per run
            "commit-tree": 2,
            "update-ref": 2,
        }
    )
    # one per iteration, three per checkpoint (the first four), four per run
    assert sum(spawned.values()) == ITERATIONS + (4 + 3) + 4
