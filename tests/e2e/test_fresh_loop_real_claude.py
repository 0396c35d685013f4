"""`ralphctl run` driving the REAL Claude Code CLI against the scripted Messages API mock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mockapi import ApiError, Reply, ToolCall, Usage, expected_cost
from tests.mockapi.turns import Turn
from tests.realcli.harness import RealClaude

pytestmark = pytest.mark.real_cli

DONE = "All three files are written.\n<promise>COMPLETE</promise>"


def ralphctl(real_claude: RealClaude, *args: str) -> subprocess.CompletedProcess[str]:
    db = real_claude.home / "ralphctl.db"
    env = {**real_claude.env, "RALPHCTL_DB": str(db), "RALPHCTL_CONFIG": "/nonexistent.toml"}
    return subprocess.run(
        [sys.executable, "-m", "ralphctl", *args],
        env=env,
        cwd=real_claude.project,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def run_loop(real_claude: RealClaude, *extra: str) -> subprocess.CompletedProcess[str]:
    return ralphctl(
        real_claude,
        "run",
        "--task",
        "Write a.txt, b.txt and c.txt, one per iteration.",
        "--agent",
        "claude",
        "--cooldown",
        "0",
        "--checkpoint-interval",
        "0",
        "--json",
        *extra,
    )


def history(real_claude: RealClaude, loop_id: str) -> dict[str, Any]:
    result = ralphctl(real_claude, "history", loop_id, "--json")
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_a_three_iteration_loop_writes_files_through_real_tools_and_completes(real_claude):
    per_iteration: list[list[Turn]] = [
        [ToolCall("Write", {"file_path": "a.txt", "content": "a\n"}), Reply("Wrote a.txt.")],
        [
            ToolCall("Write", {"file_path": "b.txt", "content": "b\n"}, usage=Usage(2000, 50)),
            Reply("Wrote b.txt.", Usage(2100, 40)),
        ],
        [ToolCall("Write", {"file_path": "c.txt", "content": "c\n"}), Reply(DONE)],
    ]
    real_claude.server.set_script(*[turn for turns in per_iteration for turn in turns])

    result = run_loop(real_claude, "--max-iterations", "10")

    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["status"] == "completed"
    assert summary["iterations"] == 3
    for name in ("a", "b", "c"):
        assert (real_claude.project / f"{name}.txt").read_text() == f"{name}\n"
    iterations = history(real_claude, summary["loop_id"])["iterations"]
    assert [it["cost_usd"] for it in iterations] == [expected_cost(t) for t in per_iteration]
    assert summary["cost_usd"] == pytest.approx(sum(expected_cost(t) for t in per_iteration))
    assert [it["completion_signal_found"] for it in iterations] == [False, False, True]
    assert all(it["num_turns"] == 2 for it in iterations)
    assert len({it["agent_session_id"] for it in iterations}) == 3  # a fresh session each time
    first_prompt = real_claude.server.main_requests[0].user_texts()[-1]
    assert first_prompt.startswith("Write a.txt, b.txt and c.txt")
    assert "iteration 1 of at most 10" in first_prompt
    assert not real_claude.server.exhausted_requests


def test_max_iterations_stops_the_loop_with_exit_1(real_claude):
    real_claude.server.set_script(Reply("Still working."), Reply("Still working."))
    result = run_loop(real_claude, "--max-iterations=2")
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["status"], summary["stop_reason"]) == ("stopped", "max_iterations")
    assert summary["cost_usd"] == pytest.approx(2 * 0.006)
    assert len(real_claude.server.main_requests) == 2


def test_an_api_error_iteration_is_recorded_as_an_error(real_claude):
    real_claude.server.set_script(ApiError(529, "overloaded_error", "Overloaded"), Reply(DONE))
    result = run_loop(real_claude, "--max-iterations", "5")
    assert result.returncode == 0, result.stderr
    first, second = history(real_claude, json.loads(result.stdout)["loop_id"])["iterations"]
    assert first["status"] == "error"
    assert first["exit_code"] == 1
    assert "529" in first["error_message"]
    assert first["cost_usd"] == 0
    assert second["status"] == "ok"
    assert second["completion_signal_found"] is True


def test_a_permission_denial_is_recorded_and_surfaced(real_claude):
    real_claude.server.set_script(
        ToolCall("Write", {"file_path": "x.txt", "content": "x"}),
        Reply("I could not write the file.\n<promise>BLOCKED: Write is denied</promise>"),
    )
    result = run_loop(real_claude, "--permission-mode", "default")
    assert result.returncode == 4, result.stderr
    assert "permission denied for Write" in result.stderr
    assert not (real_claude.project / "x.txt").exists()
    (only,) = history(real_claude, json.loads(result.stdout)["loop_id"])["iterations"]
    assert [d["tool_name"] for d in only["permission_denials"]] == ["Write"]
    assert only["blocked_reason"] == "Write is denied"


def test_the_cost_budget_is_passed_down_so_one_iteration_cannot_overspend(real_claude):
    writes = [ToolCall("Write", {"file_path": f"f{n}.txt", "content": "x"}) for n in range(6)]
    real_claude.server.set_script(*writes)
    result = run_loop(real_claude, "--max-cost", "0.015")
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout)
    assert summary["stop_reason"] == "max_cost"
    assert summary["iterations"] == 1
    assert summary["cost_usd"] <= 0.015 + 0.006  # at most one request past the budget
    assert not Path(real_claude.project / "f5.txt").exists()


def test_an_overloaded_api_counts_as_errors_and_trips_the_breaker_at_the_threshold(real_claude):
    overloaded = ApiError(529, "overloaded_error", "Overloaded")
    real_claude.server.set_script(*[overloaded] * 5)
    config = real_claude.project / "ralphctl.toml"
    config.write_text('[loops.defaults]\nerror_backoff_cap = "0s"\n')  # no 2^n s waits here
    result = run_loop(real_claude, "--max-iterations", "10")
    assert result.returncode == 3, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["status"], summary["stop_reason"]) == ("failed", "circuit_breaker")
    assert summary["iterations"] == 5  # the default threshold: 5 consecutive errors
    iterations = history(real_claude, summary["loop_id"])["iterations"]
    assert {it["status"] for it in iterations} == {"error"}
    assert all("529" in it["error_message"] for it in iterations)
    assert len(real_claude.server.main_requests) == 5
