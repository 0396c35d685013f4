"""`ralphctl run` driving the REAL Claude Code CLI against the scripted Messages API mock."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ralphctl.engine.manager import LoopManager
from ralphctl.server.app import create_app
from ralphctl.store.repository import Store
from tests.mockapi import ApiError, Reply, ToolCall, Usage, expected_cost
from tests.mockapi.turns import Turn
from tests.realcli.fixtures import every_supported_version
from tests.realcli.harness import RealClaude
from tests.server.conftest import AUTH, TOKEN

pytestmark = pytest.mark.real_cli

DONE = "All three files are written.\n<promise>COMPLETE</promise>"


def ralphctl_env(real_claude: RealClaude) -> dict[str, str]:
    db = real_claude.home / "ralphctl.db"
    return {**real_claude.env, "RALPHCTL_DB": str(db), "RALPHCTL_CONFIG": "/nonexistent.toml"}


def ralphctl(real_claude: RealClaude, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ralphctl", *args],
        env=ralphctl_env(real_claude),
        cwd=real_claude.project,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def ralphctl_bytes(real_claude: RealClaude, *args: str) -> bytes:
    """What ``ralphctl ARGS`` printed, byte for byte (it must succeed)."""
    done = subprocess.run(
        [sys.executable, "-m", "ralphctl", *args],
        env=ralphctl_env(real_claude),
        cwd=real_claude.project,
        capture_output=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


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
    check_first_transcript(real_claude, summary["loop_id"], iterations[0])


def check_first_transcript(real_claude: RealClaude, loop_id: str, first: dict[str, Any]) -> None:
    """``ralphctl logs`` and the API give back iteration 1's stream as the CLI printed it: its
    session, the mock's tool call and reply, the ``result`` line with the cost recorded."""
    raw = ralphctl_bytes(real_claude, "logs", loop_id, "--iteration", "1", "--raw")
    lines = [json.loads(line) for line in raw.splitlines()]
    assert (lines[0]["type"], lines[0]["subtype"]) == ("system", "init")
    assert lines[0]["session_id"] == first["agent_session_id"]
    blocks = [
        b for line in lines if line["type"] == "assistant" for b in line["message"]["content"]
    ]
    tool_uses = [b for b in blocks if b["type"] == "tool_use"]
    assert [(b["name"], b["input"]["content"]) for b in tool_uses] == [("Write", "a\n")]
    assert [b["text"] for b in blocks if b["type"] == "text"] == ["Wrote a.txt."]
    result = lines[-1]
    assert (result["type"], result["result"]) == ("result", "Wrote a.txt.")
    assert result["total_cost_usd"] == pytest.approx(first["cost_usd"])

    text = ralphctl(real_claude, "logs", loop_id, "--iteration", "1", "--text")
    assert text.returncode == 0, text.stderr
    assert "Wrote a.txt." in text.stdout
    assert "→ Write" in text.stdout
    assert "── finished: ok" in text.stdout

    route = f"/api/loops/{loop_id}/iterations/1/transcript"
    with Store.open(str(real_claude.home / "ralphctl.db")) as store:
        app = create_app(store, LoopManager(store, resume_on_start=False), TOKEN)
        with TestClient(app, headers=AUTH) as api:
            assert api.get(route, params={"format": "raw"}).content == raw
            from_api = api.get(route, params={"format": "text"}).text
    assert text.stdout == f"── iteration 1 ──\n{from_api}"


def test_max_iterations_stops_the_loop_with_exit_1(real_claude):
    real_claude.server.set_script(Reply("Still working."), Reply("Still working."))
    result = run_loop(real_claude, "--max-iterations=2")
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["status"], summary["stop_reason"]) == ("stopped", "max_iterations")
    assert summary["cost_usd"] == pytest.approx(2 * 0.006)
    assert len(real_claude.server.main_requests) == 2


@every_supported_version
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


@every_supported_version
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


@every_supported_version
def test_a_429_parks_the_loop_until_the_wait_is_over_and_is_never_an_error(real_claude):
    limited = ApiError(429, "rate_limit_error", "This request would exceed your rate limit")
    real_claude.server.set_script(limited, limited, Reply(DONE))
    config = real_claude.project / "ralphctl.toml"
    config.write_text('[loops.defaults]\nusage_limit_wait = "1s"\ncircuit_breaker_threshold = 1\n')
    result = run_loop(real_claude, "--max-iterations", "5")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["status"] == "completed"
    iterations = history(real_claude, summary["loop_id"])["iterations"]
    assert [it["status"] for it in iterations] == ["rate_limited", "rate_limited", "ok"]
    for parked, following in pairwise(iterations):
        waited = datetime.fromisoformat(following["started_at"]) - datetime.fromisoformat(
            parked["completed_at"]
        )
        assert waited.total_seconds() >= 0.9
