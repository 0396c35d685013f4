"""`ralphctl loops start` takes the task and the flags of `ralphctl run`, declared once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer.main

from ralphctl.cli.app import app

#: `run` flags a managed loop has no use for: the server prints nothing of a loop's progress.
RUN_ONLY = {"quiet"}


def params(*path: str) -> dict[str, Any]:
    """The parameters of a command, by name (``path``: its group and command names)."""
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return {param.name: param for param in command.params}


def test_loops_start_takes_every_run_flag_a_managed_loop_can_use_with_the_same_meaning():
    run, start = params("run"), params("loops", "start")

    missing = set(run) - set(start) - RUN_ONLY
    assert missing == set()
    for name in set(run) - RUN_ONLY - {"db", "json_out"}:  # --db, --json: loops' own words
        assert (start[name].opts, getattr(start[name], "help", None)) == (
            run[name].opts,
            getattr(run[name], "help", None),
        ), name


def test_loops_start_takes_the_task_as_its_argument_and_shows_what_it_would_run(
    tmp_path: Path,
):
    workdir = tmp_path / "work"
    workdir.mkdir()
    env = {
        **os.environ,
        "RALPHCTL_CONFIG": str(tmp_path / "none.toml"),
        "RALPHCTL_SERVER_DIR": str(tmp_path / "no-server"),
        "COLUMNS": "200",
    }
    argv = [
        *("loops", "start", "Fix the flaky test", "-C", str(workdir)),
        *("--max-calls-per-hour", "12", "--checkpoint-branch", "ralph/work", "--dry-run"),
    ]
    shown = subprocess.run(
        [sys.executable, "-m", "ralphctl", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert shown.returncode == 0, shown.stderr
    cells = [[cell.strip() for cell in line.split("│")[1:4]] for line in shown.stdout.splitlines()]
    rows = {row[0]: row[1:] for row in cells if len(row) == 3}
    assert rows["max_calls_per_hour"] == ["12", "flag"]
    assert rows["checkpoint_branch"] == ['"ralph/work"', "flag"]
    assert "Fix the flaky test" in shown.stdout  # the first prompt
    assert not (tmp_path / "no-server").exists()  # a dry run asks no server, stores nothing


def test_a_fresh_only_flag_in_hook_mode_is_named_as_a_flag(tmp_path: Path):
    env = {**os.environ, "RALPHCTL_CONFIG": str(tmp_path / "none.toml")}
    argv = ["run", "x", "--mode", "hook", "--gate", "pytest", "--cooldown", "1s", "--dry-run"]
    refused = subprocess.run(
        [sys.executable, "-m", "ralphctl", *argv, "-C", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert refused.returncode == 2
    assert "--cooldown, --gate: not available with --mode hook" in refused.stderr


def test_the_work_dir_is_judged_as_given_not_only_once_resolved(tmp_path: Path):
    env = {**os.environ, "RALPHCTL_CONFIG": str(tmp_path / "none.toml")}
    refused = subprocess.run(
        [sys.executable, "-m", "ralphctl", "run", "x", "-C", "/proc/self/cwd", "--dry-run"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert refused.returncode == 2
    assert "/proc" in refused.stderr
