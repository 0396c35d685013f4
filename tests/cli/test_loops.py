"""`ralphctl loops` and `ralphctl config show`, as a user runs them (real processes).

Without a server the commands act on the database: `start` and `resume` run in the
foreground, `pause` and `stop` ask a live runner through its sentinel file, or change a loop
that no runner runs.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

DONE = {"text": "Finished.\n<promise>COMPLETE</promise>", "cost_usd": 0.25}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "RALPHCTL_DB": str(tmp_path / "ralphctl.db"),
        "RALPHCTL_CONFIG": str(tmp_path / "no-user-config.toml"),
        "RALPHCTL_SERVER_DIR": str(tmp_path / "no-server"),
        "COLUMNS": "200",
    }


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "ralphctl", *args]


def ralphctl(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(*args), env=env, capture_output=True, text=True, timeout=120, check=False
    )


def start_args(workdir: Path, *steps: dict[str, Any]) -> list[str]:
    script = workdir.parent / f"script-{time.monotonic_ns()}.json"
    script.write_text(json.dumps({"steps": list(steps)}))
    task = workdir.parent / "TASK.md"
    task.write_text("Do the work.\n")
    return [
        "loops",
        "start",
        "--task-file",
        str(task),
        "--workdir",
        str(workdir),
        "--script",
        str(script),
        "--cooldown=0",
        "--checkpoint-interval=0",
    ]


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def iterations(env: dict[str, str]) -> list[tuple[int, str]]:
    """The iterations recorded so far (none while the database is being made)."""
    try:
        with sqlite3.connect(env["RALPHCTL_DB"]) as db:
            return list(db.execute("select n, status from iterations order by n"))
    except sqlite3.OperationalError:
        return []


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_without_a_server_start_runs_the_loop_in_the_foreground(env, workdir):
    started = ralphctl(*start_args(workdir, {"text": "one", "cost_usd": 0.5}, DONE), env=env)
    assert started.returncode == 0, started.stderr
    assert "no server is running" in started.stderr

    (loop,) = as_json(ralphctl("loops", "ls", "--json", env=env))
    assert (loop["status"], loop["iteration"], loop["cost_usd"]) == ("completed", 2, 0.75)
    assert as_json(ralphctl("loops", "show", loop["id"][:6], "--json", env=env))["id"] == loop["id"]
    assert as_json(ralphctl("loops", "ls", "--status", "running", "--json", env=env)) == []
    stats = as_json(ralphctl("loops", "stats", "--json", env=env))
    assert stats["active"]["loops"] == 0
    assert stats["all_time"] == {"loops": 1, "cost_usd": 0.75, "iterations": 2, "tokens": 0}
    table = ralphctl("loops", "ls", env=env).stdout
    assert loop["id"] in table
    assert "completed" in table


def test_pause_and_stop_reach_a_runner_in_another_process_and_agree_with_the_state_machine(
    env, workdir
):
    # The first iteration lasts until the pause is asked for (a minute at most).
    wait = "for i in $(seq 1200); do [ -e .ralph/pause ] && break; sleep 0.05; done"
    slow = {"text": "working", "bash": [wait], "cost_usd": 0.1}
    runner = subprocess.Popen(
        command(*start_args(workdir, slow, DONE)), env=env, stdout=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: iterations(env) != [])
        (loop,) = as_json(ralphctl("loops", "ls", "--json", env=env))
        busy = ralphctl(*start_args(workdir, DONE), env=env)
        assert busy.returncode == 2
        assert f"loop {loop['id']} (running) already works in" in busy.stderr

        asked = ralphctl("loops", "pause", loop["id"], env=env)
        assert asked.returncode == 0, asked.stderr
        assert "pause requested: asked its runner" in asked.stdout
        assert runner.wait(timeout=60) == 1  # paused
    finally:
        runner.kill()
        runner.wait()
    assert iterations(env) == [(1, "ok")]

    again = ralphctl("loops", "pause", loop["id"], env=env)
    assert again.returncode == 2
    assert "cannot go from paused to paused; allowed from paused: running, stopped" in again.stderr

    stopped = as_json(ralphctl("loops", "stop", loop["id"], "--json", env=env))
    assert (stopped["status"], stopped["stop_reason"]) == ("stopped", "user_stop")

    resumed = ralphctl("loops", "resume", loop["id"], "--json", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "completed"
    assert iterations(env) == [(1, "ok"), (2, "ok")]


def test_a_completed_loop_cannot_be_stopped(env, workdir):
    ralphctl(*start_args(workdir, DONE), env=env)
    (loop,) = as_json(ralphctl("loops", "ls", "--json", env=env))
    refused = ralphctl("loops", "stop", loop["id"], env=env)
    assert refused.returncode == 2
    assert "cannot go from completed to stopped; allowed from completed: none" in refused.stderr


def test_an_unknown_loop_is_a_clear_error(env):
    missing = ralphctl("loops", "show", "nope-nope", env=env)
    assert missing.returncode == 2
    assert "no loop with id 'nope-nope'" in missing.stderr


def test_config_show_says_where_every_value_came_from(env, workdir):
    Path(env["RALPHCTL_CONFIG"]).write_text("[loops]\nmax_concurrent = 3\n")
    (workdir / "ralphctl.toml").write_text(
        "[loops.defaults]\nmax_iterations = 7\n[server]\nport = 9123\n"
    )
    shown = as_json(ralphctl("config", "show", "-C", str(workdir), "--json", env=env))
    project = str(workdir / "ralphctl.toml")
    assert shown["loops.defaults"]["max_iterations"] == {"value": 7, "from": project}
    assert shown["loops.defaults"]["cooldown"] == {"value": 5.0, "from": "default"}
    assert shown["loops"]["max_concurrent"] == {"value": 3, "from": env["RALPHCTL_CONFIG"]}
    assert shown["server"]["port"] == {"value": 9123, "from": project}
    assert shown["server"]["host"] == {"value": "127.0.0.1", "from": "default"}
    table = ralphctl("config", "show", "-C", str(workdir), env=env).stdout
    assert "[loops.defaults]" in table
    assert "max_concurrent" in table


def test_config_show_names_the_file_and_field_of_a_bad_value(env, workdir):
    (workdir / "ralphctl.toml").write_text("[loops]\non_start = 'later'\n")
    bad = ralphctl("config", "show", "-C", str(workdir), env=env)
    assert bad.returncode == 2
    assert "ralphctl.toml: [loops] on_start: must be one of 'resume', 'leave_paused'" in bad.stderr


# -- through a running server ---------------------------------------------------------------


@pytest.fixture
def server(env: dict[str, str], tmp_path: Path):
    """`ralphctl serve` on a free port, allowing one loop at a time; the CLI finds it."""
    Path(env["RALPHCTL_CONFIG"]).write_text("[loops]\nmax_concurrent = 1\n")
    env["RALPHCTL_SERVER_DIR"] = str(tmp_path / "server")
    serve = "import typer; from ralphctl.cli.serve import serve_command; typer.run(serve_command)"
    process = subprocess.Popen(
        [sys.executable, "-c", serve, "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for((tmp_path / "server" / "server.json").exists)
        yield process
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_with_a_server_the_commands_go_through_its_manager(env, server, tmp_path):
    slow = {"text": "working", "sleep_s": 30, "cost_usd": 0.1}
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    started = as_json(ralphctl(*start_args(first, slow, DONE), "--json", env=env))
    assert started["status"] == "running"
    queued = as_json(ralphctl(*start_args(second, DONE), "--json", env=env))
    assert queued["status"] == "pending"
    refused = ralphctl(*start_args(tmp_path, DONE), "--no-queue", env=env)
    assert refused.returncode == 2
    assert "max_concurrent = 1" in refused.stderr

    loop_id = started["id"]
    listed = as_json(ralphctl("loops", "ls", "--status", "running", "--json", env=env))
    assert [loop["id"] for loop in listed] == [loop_id]
    paused = as_json(ralphctl("loops", "pause", loop_id, "--now", "--json", env=env))
    assert paused["status"] == "paused"
    illegal = ralphctl("loops", "pause", loop_id, env=env)
    assert illegal.returncode == 2
    assert "cannot go from paused to paused; allowed from paused: running, stopped" in (
        illegal.stderr
    )
    stopped = as_json(ralphctl("loops", "stop", loop_id, "--json", env=env))
    assert (stopped["status"], stopped["stop_reason"]) == ("stopped", "user_stop")

    def status(loop_id: str) -> str:
        return str(as_json(ralphctl("loops", "show", loop_id, "--json", env=env))["status"])

    wait_for(lambda: status(queued["id"]) == "completed")  # it took the freed slot
    stats = as_json(ralphctl("loops", "stats", "--json", env=env))
    assert (stats["active"]["loops"], stats["active"]["running"]) == (0, 0)


def test_without_a_server_a_hook_mode_loop_runs_its_session_in_the_foreground(
    env, workdir, tmp_path
):
    wrapper = tmp_path / "claude"
    fake = Path(__file__).parents[1] / "hookmode" / "fake_claude.py"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake}" "$@"\n')
    wrapper.chmod(0o755)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([[{"text": "one"}, {"text": "two"}]]))
    with tempfile.TemporaryDirectory(prefix="rh-") as runtime:  # short socket paths
        env |= {
            "RALPHCTL_CLAUDE_BIN": str(wrapper),
            "FAKE_CLAUDE_SCRIPT": str(script),
            "XDG_RUNTIME_DIR": runtime,
        }
        base = ["loops", "start", "--mode", "hook", "--task", "Write the notes."]
        refused = ralphctl(*base, "--workdir", str(workdir), "--cooldown=0", env=env)
        started = ralphctl(*base, "--workdir", str(workdir), "-n", "2", "--json", env=env)
    assert refused.returncode == 2
    assert "--cooldown: not available with --mode hook" in refused.stderr
    assert started.returncode == 1, started.stderr  # a limit ended it
    assert "no server is running" in started.stderr
    summary = json.loads(started.stdout)
    assert (summary["status"], summary["stop_reason"], summary["iterations"]) == (
        "stopped",
        "max_iterations",
        2,
    )
    (loop,) = as_json(ralphctl("loops", "ls", "--json", env=env))
    assert (loop["mode"], loop["agent"]) == ("hook", "claude")
    assert iterations(env) == [(1, "ok"), (2, "ok")]


def test_an_unknown_mode_is_a_usage_error(env, workdir):
    refused = ralphctl("loops", "start", "--mode", "dreamy", "-t", "x", "-C", str(workdir), env=env)
    assert refused.returncode == 2
    assert "mode 'dreamy': use fresh or hook" in refused.stderr
