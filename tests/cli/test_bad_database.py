"""A database that cannot work is found before the agent changes anything (issue 9, defect 5);
one that fails once the agent runs stops it and says what it may have changed."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

TOUCH = {"text": "Edited.", "bash": ["echo changed > touched.txt"], "cost_usd": 0.1}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "RALPHCTL_CONFIG": str(tmp_path / "no-user-config.toml"),
        "COLUMNS": "200",
    }


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def run(workdir: Path, env: dict[str, str], db: str, *steps: dict[str, object]):
    script = workdir.parent / "script.json"
    script.write_text(json.dumps({"steps": list(steps)}))
    argv = ["run", "Do the work.", "--script", str(script), "--checkpoint-interval=0"]
    return subprocess.run(
        [sys.executable, "-m", "ralphctl", *argv, "--workdir", str(workdir), "--db", db],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def flat(text: str) -> str:
    """The message as one line (the terminal wraps long paths)."""
    return " ".join(text.split())


def not_sqlite(tmp_path: Path) -> str:
    path = tmp_path / "notes.txt"
    path.write_text("my shopping list\n")
    return str(path)


def another_apps(tmp_path: Path) -> str:
    path = tmp_path / "history.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE visits (url TEXT)")
    conn.close()
    return str(path)


def under_a_file(tmp_path: Path) -> str:
    (tmp_path / "a-file").write_text("")
    return str(tmp_path / "a-file" / "missing-dir" / "ralphctl.db")


@pytest.mark.parametrize(
    ("make_db", "message"),
    [
        (not_sqlite, "is not a ralphctl database: it is not a SQLite file"),
        (another_apps, "holds another application's tables (visits)"),
        (under_a_file, "a-file is not a directory"),
        (lambda _: "postgresql://u@h:port/x", "invalid database URL"),
    ],
    ids=["not sqlite", "another app's sqlite", "missing dir under a file", "bad postgres url"],
)
def test_a_bad_db_exits_2_before_the_agent_starts(tmp_path, env, workdir, make_db, message):
    done = run(workdir, env, make_db(tmp_path), TOUCH)

    assert done.returncode == 2, done.stderr
    assert message in flat(done.stderr)
    assert not (workdir / "touched.txt").exists()  # the agent never ran


def test_a_store_that_fails_once_the_agent_runs_stops_it_and_lists_what_changed(env, workdir):
    for args in (["init", "-q"], ["config", "user.email", "t@t"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=workdir, check=True)
    (workdir / "before.txt").write_text("uncommitted\n")
    slow = {**TOUCH, "sleep_s": 30}
    refused_port = "postgresql://ralphctl@127.0.0.1:1/ralphctl"  # parses; nobody listens

    started = time.monotonic()
    done = run(workdir, env, refused_port, slow)

    assert time.monotonic() - started < 20  # the agent was stopped, not waited for
    assert done.returncode == 2, done.stderr
    said = flat(done.stderr)
    assert "The agent was stopped before anything was recorded; nothing was reverted" in said
    assert "(git status --short): ?? before.txt" in said
