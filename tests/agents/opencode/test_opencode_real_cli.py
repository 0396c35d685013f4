"""The pinned OpenCode CLI (1.18.33), driven for real against the scripted Chat Completions
mock through ``ralphctl run``: a file lands through its real write tool, the loop completes on
the marker with the tokens and the cost the mock served, an API error is recorded as one, a
429 parks the loop, and the plan mode's refusal is surfaced; and directly, the adapter's
command resuming a session in isolation from the user's global config.

One mock and one temp home serve the whole module (opencode's first run in a home sets up its
database); each test works in its own project folder and loads its own script.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentRequest, ProcessOutcome
from ralphctl.agents.opencode import OpencodeAdapter
from ralphctl.domain.model import IterationResult
from tests.agents.opencode.harness import (
    MODEL,
    OpencodeRun,
    RealOpencode,
    expected_cost,
    real_opencode_session,
)
from tests.agents.opencode.scenarios import ATTEMPTS
from tests.agents.pinned import run_ralphctl
from tests.mockapi import ApiError, Reply, ToolCall, Usage

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(180)]

DONE = "Wrote a.txt.\n<promise>COMPLETE</promise>"


@pytest.fixture(scope="module")
def shared_opencode(
    opencode_bin: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealOpencode]:
    with real_opencode_session(opencode_bin, tmp_path_factory.mktemp("opencode")) as session:
        yield session


@pytest.fixture
def opencode(shared_opencode: RealOpencode, tmp_path: Path) -> RealOpencode:
    """The module's CLI and mock, in this test's own project folder."""
    return shared_opencode.in_project(tmp_path / "project")


def ralphctl(opencode: RealOpencode, *args: str) -> subprocess.CompletedProcess[str]:
    database = opencode.project.parent / "ralphctl.db"
    return run_ralphctl(opencode.env, opencode.project, database, *args, timeout=150)


def run_loop(opencode: RealOpencode, *extra: str) -> subprocess.CompletedProcess[str]:
    return ralphctl(
        opencode,
        "run",
        "--task",
        "Write a.txt.",
        "--agent",
        "opencode",
        "--cooldown",
        "0",
        "--checkpoint-interval",
        "0",
        "--json",
        *extra,
    )


def iterations(
    opencode: RealOpencode, result: subprocess.CompletedProcess[str]
) -> list[dict[str, Any]]:
    loop_id = json.loads(result.stdout)["loop_id"]
    shown = ralphctl(opencode, "history", loop_id, "--json")
    assert shown.returncode == 0, shown.stderr
    found: list[dict[str, Any]] = json.loads(shown.stdout)["iterations"]
    return found


def write_config(opencode: RealOpencode, toml: str) -> None:
    (opencode.project / "ralphctl.toml").write_text(toml)


def test_a_loop_lands_a_file_through_the_real_write_tool_and_completes_at_the_served_cost(
    opencode,
):
    write = Usage(1000, 40, cache_read_input_tokens=200)
    done = Usage(1100, 20, cache_read_input_tokens=400)
    opencode.server.set_script(
        ToolCall("write", {"filePath": "a.txt", "content": "a\n"}, usage=write),
        Reply(DONE, done),
    )
    served_before = len(opencode.server.main_requests)
    write_config(opencode, f'[loops.llm]\nmodel = "{MODEL}"\n')

    result = run_loop(opencode, "--max-iterations", "3")

    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["status"], summary["iterations"]) == ("completed", 1)
    assert (opencode.project / "a.txt").read_text() == "a\n"
    (only,) = iterations(opencode, result)
    assert only["completion_signal_found"]
    assert (only["tokens_input"], only["tokens_output"], only["tokens_cache_read"]) == (
        2100,
        60,
        600,
    )
    assert only["cost_source"] == "reported"
    assert only["cost_usd"] == pytest.approx(expected_cost([write, done]))
    assert only["agent_session_id"].startswith("ses_")
    first, second = opencode.server.main_requests[served_before:]
    assert first.body["model"] == "mock-coder"
    prompt = first.user_texts()[-1]
    assert prompt.startswith("Write a.txt.")
    assert "iteration 1 of at most 3" in prompt
    assert second.messages[-1]["role"] == "tool"


def test_an_api_error_iteration_is_recorded_as_an_error(opencode):
    opencode.server.set_script(ApiError(400, "invalid_request_error", "Unsupported parameter"))

    result = run_loop(opencode, "--max-iterations", "1")

    assert result.returncode == 1, result.stderr  # the iteration budget ended it
    (failed,) = iterations(opencode, result)
    assert (failed["status"], failed["exit_code"]) == ("error", 1)
    assert "Unsupported parameter" in failed["error_message"]
    assert failed["signals"]["error_class"] == "api_error"


def test_a_429_parks_the_loop_until_the_wait_is_over_and_is_never_an_error(opencode):
    limited = ApiError(429, "rate_limit_exceeded", "Rate limit reached for requests")
    opencode.server.set_script(*[limited] * ATTEMPTS, Reply(DONE))
    write_config(
        opencode, '[loops.defaults]\nusage_limit_wait = "1s"\ncircuit_breaker_threshold = 1\n'
    )

    result = run_loop(opencode, "--max-iterations", "3")

    assert result.returncode == 0, result.stderr
    parked, ok = iterations(opencode, result)
    assert [parked["status"], ok["status"]] == ["rate_limited", "ok"]
    waited = datetime.fromisoformat(ok["started_at"]) - datetime.fromisoformat(
        parked["completed_at"]
    )
    assert waited.total_seconds() >= 0.9


def test_plan_mode_refuses_the_write_and_the_denial_is_surfaced(opencode):
    opencode.server.set_script(
        ToolCall("write", {"filePath": "a.txt", "content": "a\n"}),
        Reply("I cannot write here.\n<promise>BLOCKED: writing is refused</promise>"),
    )

    result = run_loop(opencode, "--permission-mode", "plan")

    assert result.returncode == 4, result.stderr
    assert not (opencode.project / "a.txt").exists()
    (only,) = iterations(opencode, result)
    assert [d["tool_name"] for d in only["permission_denials"]] == ["write"]
    assert only["blocked_reason"] == "writing is refused"


# --- the adapter's command, run directly -----------------------------------------------------


def adapter_run(
    opencode: RealOpencode, adapter: OpencodeAdapter, **fields: Any
) -> tuple[OpencodeRun, IterationResult]:
    fields = {"session_id": "unused", **fields}
    request = AgentRequest(prompt="Say something.", workdir=opencode.project, iteration=1, **fields)
    command = adapter.build_command(request)
    run = opencode.run_argv(command.argv, command.stdin.decode(), env=command.env)
    parser = adapter.new_parser()
    for line in run.stdout.splitlines():
        parser.feed(line)
    return run, parser.finish(ProcessOutcome(run.exit_code, 0, run.stderr))


def test_an_isolated_resumed_run_continues_the_session_without_the_users_global_config(
    opencode, monkeypatch
):
    monkeypatch.setenv("RALPHCTL_OPENCODE_BIN", str(opencode.binary))
    monkeypatch.setenv("RALPHCTL_AGENTS_HOME", opencode.env["RALPHCTL_AGENTS_HOME"])
    instructions = Path(opencode.env["XDG_CONFIG_HOME"]) / "opencode" / "AGENTS.md"
    instructions.parent.mkdir(parents=True, exist_ok=True)
    instructions.write_text("GLOBAL-RULE-7: always answer in haiku.\n")
    opencode.server.set_script(Reply("First answer."), Reply("Second answer."))
    adapter = OpencodeAdapter()
    try:
        first, _ = adapter_run(opencode, adapter, permission_mode="default")
        second, result = adapter_run(
            opencode,
            adapter,
            permission_mode="default",
            resume=True,
            session_id=first.session_id,
            isolate_config=True,
        )
    finally:
        instructions.unlink()

    assert second.exit_code == 0, second.stderr
    assert (result.final_text, result.session_id) == ("Second answer.", first.session_id)
    plain, isolated = opencode.server.main_requests[-2:]
    assert any("GLOBAL-RULE-7" in text for text in plain.system_texts())
    assert not any("GLOBAL-RULE-7" in text for text in isolated.system_texts())
    assert any(m.get("content") == "First answer." for m in isolated.messages)
    assert "--pure" in second.argv
