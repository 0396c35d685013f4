"""`ralphctl` as a user runs it: a real process, real exit codes, real output."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.engine.victims import asleep_in, pid_in, wait_for


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "RALPHCTL_DB": str(tmp_path / "ralphctl.db"),
        "RALPHCTL_CONFIG": str(tmp_path / "no-user-config.toml"),
        "COLUMNS": "200",
    }


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def ralphctl(
    *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ralphctl", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def script(workdir: Path, *steps: dict[str, Any]) -> str:
    path = workdir.parent / "script.json"
    path.write_text(json.dumps({"steps": list(steps)}))
    return str(path)


def scripted_run(
    workdir: Path, env: dict[str, str], *steps: dict[str, Any], extra: tuple[str, ...] = ()
):
    return ralphctl(
        "run",
        "--task",
        "Do the work.",
        "--script",
        script(workdir, *steps),
        "--cooldown=0",
        "--checkpoint-interval=0",
        "--workdir",
        str(workdir),
        "--json",
        *extra,
        env=env,
    )


DONE = {"text": "Finished.\n<promise>COMPLETE</promise>", "cost_usd": 0.25}


def test_version_and_help(env):
    assert ralphctl("--version", env=env).stdout.startswith("ralphctl ")
    help_text = ralphctl("run", "--help", env=env).stdout
    for flag in ("--max-iterations", "--agent-args", "--claude-args", "--dry-run", "--task-file"):
        assert flag in help_text


def test_a_completed_loop_exits_0_and_prints_a_json_summary(env, workdir):
    result = scripted_run(workdir, env, {"text": "half"}, DONE)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["status"] == "completed"
    assert summary["iterations"] == 2
    assert summary["cost_usd"] == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("step", "extra", "code", "status"),
    [
        ({"text": "still working"}, ("--max-iterations=2",), 1, "stopped"),
        ({"text": "x", "cost_usd": 1}, ("--max-cost", "1.5"), 1, "stopped"),
        ({"text": "<promise>BLOCKED: need a human</promise>"}, (), 4, "blocked"),
        ({"is_error": True, "api_error_status": 529}, ("--max-iterations", "9"), 3, "failed"),
    ],
)
def test_exit_codes_follow_the_stop_reason(env, workdir, step, extra, code, status):
    (workdir / "ralphctl.toml").write_text('[loops.defaults]\nerror_backoff_cap = "0s"\n')
    result = scripted_run(workdir, env, step, extra=extra)
    assert result.returncode == code, result.stderr
    assert json.loads(result.stdout)["status"] == status


def test_a_finished_run_closes_its_database_leaving_no_write_ahead_log_beside_it(
    env, workdir, tmp_path
):
    assert scripted_run(workdir, env, {"text": "working"}, extra=("-n", "1")).returncode == 1
    assert sorted(path.name for path in tmp_path.glob("ralphctl.db*")) == ["ralphctl.db"]
    loop_id = json.loads(ralphctl("status", "--json", env=env).stdout)[0]["id"]
    assert ralphctl("resume", loop_id, "-n", "2", env=env).returncode == 1
    assert sorted(path.name for path in tmp_path.glob("ralphctl.db*")) == ["ralphctl.db"]


def test_dry_run_shows_config_sources_command_and_prompt_without_a_database(env, workdir):
    (workdir / "ralphctl.toml").write_text("[loops.defaults]\nmax_iterations = 42\n")
    result = ralphctl(
        "run",
        "Fix the bug",
        "--agent",
        "claude",
        "--agent-args=--model sonnet",
        "--max-cost=5",
        "--workdir",
        str(workdir),
        "--dry-run",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "ralphctl.toml" in out  # where max_iterations came from
    assert "42" in out
    assert "-p --output-format stream-json --verbose" in out
    assert "--permission-mode acceptEdits" in out
    assert "--model sonnet" in out
    assert "Fix the bug" in out
    assert not Path(env["RALPHCTL_DB"]).exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run",), "give the task once"),
        (("run", "a", "--task", "b"), "give the task once"),
        (("run", "--task-file", "/no/such/TASK.md"), "cannot read it"),
        (("run", "x", "--max-iterations", "0"), "max_iterations (from flag)"),
        (("run", "x", "--max-runtime", "soon"), "is not a duration"),
        (("run", "x", "--agent", "nope"), "unknown agent"),
        (("run", "x", "--workdir", "/no/such/dir"), "not a directory"),
        (("run", "x", "--agent-args", "'unbalanced"), "--agent-args"),
        (("run", "x", "--max-cost", "lots"), "--max-cost"),
        (("history", "zzzzzzzz"), "no loop"),
    ],
)
def test_usage_errors_exit_2_with_a_clear_message(env, args, message):
    result = ralphctl(*args, "--dry-run" if args[0] == "run" else "--json", env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


def test_a_malformed_project_config_exits_2_naming_the_file(env, workdir):
    (workdir / "ralphctl.toml").write_text("[loops.defaults]\nmax_cost_usd = 'cheap'\n")
    result = scripted_run(workdir, env, DONE)
    assert result.returncode == 2
    assert "ralphctl.toml" in result.stderr
    assert "max_cost_usd" in result.stderr


def test_a_missing_claude_exits_3_saying_how_to_install_it(env, workdir):
    env = {**env, "PATH": "/nonexistent", "RALPHCTL_CLAUDE_BIN": ""}
    result = ralphctl("run", "x", "--workdir", str(workdir), env=env)
    assert result.returncode == 3
    assert "npm install -g @anthropic-ai/claude-code" in result.stderr


def test_a_corrupt_database_is_a_clear_error(env, workdir):
    Path(env["RALPHCTL_DB"]).write_bytes(os.urandom(4096))
    result = scripted_run(workdir, env, DONE)
    assert result.returncode == 2
    assert "is not a ralphctl database" in result.stderr
    assert "Traceback" not in result.stderr


def test_status_and_history_report_every_loop_and_iteration(env, workdir):
    scripted_run(workdir, env, {"text": "one", "cost_usd": 0.1}, DONE)
    loops = json.loads(ralphctl("status", "--json", env=env).stdout)
    assert [loop["status"] for loop in loops] == ["completed"]
    loop_id = loops[0]["id"]
    history = json.loads(ralphctl("history", loop_id[:6], "--json", env=env).stdout)
    assert [it["n"] for it in history["iterations"]] == [1, 2]
    assert history["iterations"][1]["completion_signal_found"] is True
    table = ralphctl("history", loop_id, env=env).stdout
    assert "complete" in table
    assert loop_id in ralphctl("status", env=env).stdout


def test_resume_raises_a_budget_and_continues_with_the_totals_intact(env, workdir):
    step = {"text": "working", "cost_usd": 0.1, "edits": [{"path": "log", "append": "."}]}
    first = scripted_run(workdir, env, step, extra=("-n", "2"))
    assert first.returncode == 1
    loop_id = json.loads(first.stdout)["loop_id"]
    again = ralphctl("resume", loop_id, "--max-iterations", "4", "--json", env=env)
    assert again.returncode == 1, again.stderr
    summary = json.loads(again.stdout)
    assert summary["iterations"] == 4
    assert summary["cost_usd"] == pytest.approx(0.4)


def test_a_completed_loop_cannot_be_resumed(env, workdir):
    loop_id = json.loads(scripted_run(workdir, env, DONE).stdout)["loop_id"]
    result = ralphctl("resume", loop_id, env=env)
    assert result.returncode == 2
    assert "has completed" in result.stderr


def start_slow_loop(env: dict[str, str], workdir: Path) -> subprocess.Popen[str]:
    steps = [
        {"text": "one", "cost_usd": 0.1},
        {"text": "two", "cost_usd": 0.1},
        {"text": "slow", "bash": ["echo $PPID > agent.pid"], "sleep_s": 60, "cost_usd": 0.1},
        DONE,
    ]
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ralphctl",
            "run",
            "--task",
            "t",
            "--script",
            script(workdir, *steps),
            "--cooldown",
            "0",
            "--checkpoint-interval",
            "0",
            "--workdir",
            str(workdir),
            "--json",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_iteration(db: str, n: int) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(db) as conn:
                row = conn.execute(
                    "SELECT loop_id FROM iterations WHERE n = ? AND status = 'running'", (n,)
                ).fetchone()
            if row:
                return str(row[0])
        except sqlite3.OperationalError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"iteration {n} never started")


def agent_pids(loop_id: str) -> list[int]:
    """Processes whose environment names this loop (the agent and its children)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if f"RALPHCTL_LOOP_ID={loop_id}".encode() in environ.split(b"\0"):
            pids.append(int(proc.name))
    return pids


def test_ctrl_c_exits_130_kills_the_agent_and_resume_completes(env, workdir):
    runner = start_slow_loop(env, workdir)
    loop_id = wait_for_iteration(env["RALPHCTL_DB"], 3)
    time.sleep(0.3)
    runner.send_signal(signal.SIGINT)
    out, err = runner.communicate(timeout=30)
    assert runner.returncode == 130, err
    assert json.loads(out)["stop_reason"] == "interrupted"
    assert agent_pids(loop_id) == []
    resumed = ralphctl("resume", loop_id, "--json", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["iterations"] == 4


def test_kill_9_mid_iteration_loses_no_recorded_iteration_and_resume_stops_the_orphan(env, workdir):
    runner = start_slow_loop(env, workdir)
    loop_id = wait_for_iteration(env["RALPHCTL_DB"], 3)
    wait_for(lambda: asleep_in(workdir / "agent.pid"), timeout=30)
    runner.kill()
    runner.wait(timeout=10)
    orphans = agent_pids(loop_id)
    assert pid_in(workdir / "agent.pid") in orphans  # the agent goes on without its runner

    status = json.loads(ralphctl("status", "--json", env=env).stdout)[0]
    assert status["status"] == "running"
    assert status["runner_alive"] is False
    resumed = ralphctl("resume", loop_id, "--json", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert agent_pids(loop_id) == []
    history = json.loads(ralphctl("history", loop_id, "--json", env=env).stdout)
    assert [(it["n"], it["status"]) for it in history["iterations"]] == [
        (1, "ok"),
        (2, "ok"),
        (3, "interrupted"),
        (4, "ok"),
    ]
    interrupted = history["iterations"][2]
    assert interrupted["agent_pid"] in orphans
    assert interrupted["error_message"].endswith(
        f"its agent (pid {interrupted['agent_pid']}) was still running: stopped with SIGTERM"
    )
    assert history["loop"]["cost_usd"] == pytest.approx(0.45)


@pytest.fixture
def tiny_disk(tmp_path: Path):
    """A 1 MiB filesystem (needs root to mount; CI runs as root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "tiny"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_stops_the_loop_with_exit_3_and_loses_nothing_recorded(env, workdir, tiny_disk):
    env = {**env, "RALPHCTL_DB": str(tiny_disk / "ralphctl.db")}
    assert ralphctl("status", env=env).returncode == 0  # creates the schema
    filler = tiny_disk / "filler"
    free = os.statvfs(tiny_disk).f_bavail * os.statvfs(tiny_disk).f_frsize
    filler.write_bytes(b"\0" * max(0, free - 256 * 1024))
    step = {
        "text": "x" * 2000,
        "cost_usd": 0.01,
        "tokens": {"input": 10, "output": 10},
        "edits": [{"path": "log", "append": "."}],
    }

    full = scripted_run(workdir, env, step, extra=("--max-iterations", "500"))

    assert full.returncode == 3, full.stderr
    assert "disk is full" in full.stderr
    assert "ralphctl resume" in full.stderr
    assert "Traceback" not in full.stderr
    filler.unlink()
    loops = json.loads(ralphctl("status", "--json", env=env).stdout)
    loop_id = loops[0]["id"]
    before = json.loads(ralphctl("history", loop_id, "--json", env=env).stdout)["iterations"]
    recorded = [it["n"] for it in before if it["status"] == "ok"]
    assert recorded == list(range(1, len(recorded) + 1))
    assert len(recorded) > 0
    resumed = ralphctl("resume", loop_id, "--max-iterations", str(len(before) + 2), env=env)
    assert resumed.returncode == 1, resumed.stderr
    after = json.loads(ralphctl("history", loop_id, "--json", env=env).stdout)["iterations"]
    assert [it["n"] for it in after][: len(recorded)] == recorded


EXAMPLE_WORKFLOW = Path(__file__).parents[2] / "examples" / "workflows" / "e2e-testing"


def test_a_workflow_supplies_the_prompt_and_its_loop_settings(env, workdir, tmp_path):
    env = {**env, "RALPHCTL_WORKFLOWS_DIR": str(tmp_path / "workflows")}
    assert ralphctl("workflow", "install", str(EXAMPLE_WORKFLOW), env=env).returncode == 0
    dry = ralphctl(
        "run",
        "the login flow",
        "--workflow",
        "e2e-testing",
        "--workdir",
        str(workdir),
        "--max-iterations",
        "7",
        "--dry-run",
        env=env,
    )
    assert dry.returncode == 0, dry.stderr
    assert "Write end-to-end tests for: the login flow" in dry.stdout
    assert "workflow e2e-testing" in dry.stdout  # where completion_signal came from
    assert "<promise>E2E COMPLETE</promise>" in dry.stdout
    done = {"text": "All flows covered.\n<promise>E2E COMPLETE</promise>"}
    result = ralphctl(
        "run",
        "the login flow",
        "--workflow",
        "e2e-testing",
        "--script",
        script(workdir, done),
        "--workdir",
        str(workdir),
        "--cooldown",
        "0",
        "--json",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    loop = json.loads(ralphctl("status", "--json", env=env).stdout)[0]
    assert loop["workflow"] == "e2e-testing"
    assert loop["config"]["max_iterations"] == 20


def test_an_unknown_workflow_is_a_usage_error(env, workdir, tmp_path):
    env = {**env, "RALPHCTL_WORKFLOWS_DIR": str(tmp_path / "workflows")}
    result = ralphctl("run", "x", "--workflow", "nope", "--workdir", str(workdir), env=env)
    assert result.returncode == 2
    assert "nope" in result.stderr
