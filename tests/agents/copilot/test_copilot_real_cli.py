"""`ralphctl run --agent copilot` driving the REAL Copilot CLI (1.0.102, bring-your-own-key
mode) against the scripted Chat Completions mock, end to end and offline."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentRequest
from ralphctl.agents.copilot import CopilotAdapter
from ralphctl.agents.copilot_stream import CopilotStreamParser
from ralphctl.agents.process import run_agent
from ralphctl.domain.costs import price_for
from ralphctl.domain.model import TokenUsage
from tests.agents.copilot.harness import RealCopilot, copilot_session
from tests.agents.copilot.lines import exited
from tests.agents.copilot.scenarios import RATE_LIMIT_ATTEMPTS, SCENARIOS
from tests.agents.pinned import run_ralphctl
from tests.mockapi import ApiError, Reply, ToolCall, Usage
from tests.mockapi.openai_chat import tool_result_texts

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(120)]

DONE = "Wrote notes.txt.\n<promise>COMPLETE</promise>"
CASSETTES = Path(__file__).parents[1] / "cassettes" / "copilot"


@pytest.fixture(scope="module")
def copilot(copilot_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCopilot]:
    """One mock and one CLI home for the module; each test gets its own project and database."""
    with copilot_session(copilot_bin, tmp_path_factory.mktemp("copilot")) as session:
        yield session


@pytest.fixture
def project(copilot: RealCopilot, tmp_path: Path) -> Path:
    copilot.project = tmp_path / "project"
    copilot.project.mkdir()
    return copilot.project


def ralphctl(copilot: RealCopilot, *args: str) -> subprocess.CompletedProcess[str]:
    database = copilot.project.parent / "ralphctl.db"
    return run_ralphctl(copilot.env, copilot.project, database, *args, timeout=100)


def run_loop(copilot: RealCopilot, *extra: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    done = ralphctl(
        copilot,
        "run",
        "--task",
        "Write notes.txt.",
        "--agent",
        "copilot",
        "--cooldown",
        "0",
        "--checkpoint-interval",
        "0",
        "--max-iterations",
        "3",
        "--json",
        *extra,
    )
    return done, json.loads(done.stdout) if done.stdout.strip() else None


def iterations(copilot: RealCopilot, loop_id: str) -> list[dict[str, Any]]:
    shown = ralphctl(copilot, "history", loop_id, "--json")
    assert shown.returncode == 0, shown.stderr
    found: list[dict[str, Any]] = json.loads(shown.stdout)["iterations"]
    return found


def create_notes(project: Path, usage: Usage) -> ToolCall:
    return ToolCall(
        "create", {"path": str(project / "notes.txt"), "file_text": "hi\n"}, usage=usage
    )


def test_a_loop_lands_a_file_through_the_create_tool_and_completes_with_the_served_tokens(
    copilot, project
):
    copilot.server.set_script(
        create_notes(project, Usage(1200, 80)),
        Reply(DONE, Usage(1300, 20, cache_read_input_tokens=400)),
    )

    done, summary = run_loop(copilot)

    assert done.returncode == 0, done.stderr
    assert (summary["status"], summary["iterations"]) == ("completed", 1)
    assert (project / "notes.txt").read_text() == "hi\n"
    (only,) = iterations(copilot, summary["loop_id"])
    assert (only["tokens_input"], only["tokens_output"]) == (1200 + 1300, 80 + 20)
    assert only["tokens_cache_read"] == 400
    price = price_for("gpt-4.1")  # no cost in the stream: the engine prices the tokens
    assert price is not None
    assert only["cost_usd"] == pytest.approx(price.cost(TokenUsage(2500, 100, cache_read=400)))
    assert only["completion_signal_found"] is True
    first, second = copilot.server.main_requests
    assert "Write notes.txt." in first.user_texts()[-1]  # the prompt came on stdin
    assert tool_result_texts(second) == [f"Created file {project / 'notes.txt'} with 3 characters"]
    assert not list(Path(copilot.env["XDG_RUNTIME_DIR"]).rglob("copilot-usage-*"))  # read, gone


def test_an_api_error_is_recorded_as_an_error_and_the_loop_goes_on(copilot, project):
    copilot.server.set_script(ApiError(400, "invalid_request_error", "Bad request"), Reply(DONE))
    (project / "ralphctl.toml").write_text('[loops.defaults]\nerror_backoff_cap = "0s"\n')

    done, summary = run_loop(copilot)

    assert done.returncode == 0, done.stderr
    first, second = iterations(copilot, summary["loop_id"])
    assert first["status"] == "error"
    assert "API error status 400" in first["error_message"]
    assert second["status"] == "ok"


def test_a_429_parks_the_loop_instead_of_failing_it(copilot, project):
    limited = ApiError(429, "rate_limit_exceeded", "Rate limit reached")
    copilot.server.set_script(*[limited] * RATE_LIMIT_ATTEMPTS, Reply(DONE))
    (project / "ralphctl.toml").write_text(
        '[loops.defaults]\nusage_limit_wait = "1s"\ncircuit_breaker_threshold = 1\n'
    )

    done, summary = run_loop(copilot)

    assert done.returncode == 0, done.stderr
    assert summary["status"] == "completed"
    statuses = [it["status"] for it in iterations(copilot, summary["loop_id"])]
    assert statuses == ["rate_limited", "ok"]


def test_plan_mode_refuses_the_write_and_the_denial_is_surfaced(copilot, project):
    """Isolated too: the CLI keeps its state in a home of its own, under ralphctl's data dir."""
    copilot.server.set_script(
        create_notes(project, Usage(1000, 50)),
        Reply("I may not write.\n<promise>BLOCKED: create is denied</promise>"),
    )
    homes = copilot.home / ".local" / "share" / "ralphctl" / "copilot-homes"
    before = set((copilot.home / ".copilot" / "session-state").glob("*"))

    done, summary = run_loop(copilot, "--permission-mode", "plan", "--isolate-agent-config")

    assert done.returncode == 4, done.stderr
    assert "permission denied for create" in done.stderr
    assert not (project / "notes.txt").exists()
    (only,) = iterations(copilot, summary["loop_id"])
    assert [d["tool_name"] for d in only["permission_denials"]] == ["create"]
    (home,) = homes.iterdir()
    assert (home / "session-state" / only["agent_session_id"]).is_dir()
    assert set((copilot.home / ".copilot" / "session-state").glob("*")) == before


def test_the_text_reply_cassette_still_matches_the_pinned_cli(copilot, project, tmp_path):
    """Re-record (python -m tests.agents.copilot.record_cassettes) when this fails."""
    run = SCENARIOS["text_reply"].play(copilot)
    recorded = [
        json.loads(line) for line in (CASSETTES / "text_reply.jsonl").read_text().splitlines()
    ]

    assert run.exit_code == 0
    assert [e["type"] for e in run.events] == [e["type"] for e in recorded]
    assert run.usage is not None
    usage = tmp_path / "usage.json"
    usage.write_bytes(run.usage)
    parser = CopilotStreamParser(usage_file=usage)
    for line in run.stdout.splitlines():
        parser.feed(line)
    result = parser.finish(exited(run.exit_code))
    assert (result.final_text, result.tokens.input, result.tokens.output) == (
        "All done.",
        1000,
        100,
    )


def test_a_resumed_session_continues_and_counts_only_its_own_tokens(copilot, project, monkeypatch):
    """The usage file of a resumed session totals every run of it (checked: 1000 + 2000 in):
    the adapter takes off what the session's record held before."""
    monkeypatch.setenv("RALPHCTL_COPILOT_BIN", copilot.env["RALPHCTL_COPILOT_BIN"])
    monkeypatch.setenv("COPILOT_HOME", str(copilot.home / ".copilot"))  # where it runs
    session = "5e55a1d0-0000-4000-8000-0000000000ee"
    copilot.server.set_script(Reply("first", Usage(1000, 100)), Reply("second", Usage(2000, 50)))
    first = copilot.run("Remember 42.", "--session-id", session, "--allow-all-tools")
    assert first.exit_code == 0, first.stderr
    adapter = CopilotAdapter()
    request = AgentRequest(
        prompt="What did I ask you to remember?",
        workdir=project,
        iteration=2,
        session_id=session,
        resume=True,
        prompt_path=Path(copilot.env["XDG_RUNTIME_DIR"]) / "prompts" / "resume.md",
    )
    command = adapter.build_command(request)

    result = asyncio.run(
        run_agent(
            replace(command, env={**copilot.env, **command.env}),
            adapter.new_parser(),
            cwd=project,
            timeout=60,
        )
    )

    assert result.session_id == session
    assert result.final_text == "second"
    assert "first" in json.dumps(copilot.server.main_requests[-1].messages)  # it remembers
    assert result.tokens == TokenUsage(2000, 50)
