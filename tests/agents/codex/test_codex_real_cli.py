"""The pinned Codex CLI (0.169.0), driven for real against the scripted Responses API mock:
through ``ralphctl run`` (files land, completion, tokens, errors, 429 parking, a denial),
and directly (the recorded cassettes still match, resume, isolation from the user's config).

One mock and one pair of temp homes serve the whole module; each test works in its own
project folder and loads its own script.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentRequest
from ralphctl.agents.codex import CodexAdapter
from ralphctl.agents.codex_session import session_tokens, thread_totals
from ralphctl.domain.costs import price_for
from ralphctl.domain.model import ModelTokens, TokenUsage
from ralphctl.store.repository import Store
from tests.agents.codex.harness import MODEL, CodexRun, RealCodex, real_codex_session
from tests.agents.codex.scenarios import ADD_NOTES_PATCH, SCENARIOS
from tests.agents.codex.streams import CASSETTES
from tests.agents.pinned import run_ralphctl
from tests.agents.streams import exited
from tests.mockapi import ApiError, Reply, ToolCall, Usage
from tests.mockapi.openai_responses import input_texts, tool_outputs

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(120)]

DONE = "Both files are written.\n<promise>COMPLETE</promise>"


@pytest.fixture(scope="module")
def shared_codex(codex_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCodex]:
    with real_codex_session(codex_bin, tmp_path_factory.mktemp("codex")) as session:
        yield session


@pytest.fixture
def codex(shared_codex: RealCodex, tmp_path: Path) -> RealCodex:
    """The module's CLI and mock, in this test's own project folder."""
    return shared_codex.in_project(tmp_path / "project")


def ralphctl(codex: RealCodex, *args: str) -> subprocess.CompletedProcess[str]:
    database = codex.project.parent / "ralphctl.db"
    return run_ralphctl(codex.env, codex.project, database, *args, timeout=90)


def run_loop(codex: RealCodex, *extra: str) -> subprocess.CompletedProcess[str]:
    return ralphctl(
        codex,
        "run",
        "--task",
        "Write a.txt, then notes.txt.",
        "--agent",
        "codex",
        "--cooldown",
        "0",
        "--checkpoint-interval",
        "0",
        "--json",
        *extra,
    )


def iterations(codex: RealCodex, result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """The loop's iterations as recorded (read from its database, as ``history`` does)."""
    loop_id = json.loads(result.stdout)["loop_id"]
    with Store.open(str(codex.project.parent / "ralphctl.db")) as store:
        return [asdict(record) for record in store.iterations(loop_id)]


def write_config(codex: RealCodex, toml: str) -> None:
    (codex.project / "ralphctl.toml").write_text(f"[loops.defaults]\n{toml}")


# --- through ralphctl ----------------------------------------------------------------------


def test_a_loop_lands_files_through_real_tools_completes_and_counts_the_served_tokens(codex):
    first = [
        ToolCall("exec_command", {"cmd": "echo a > a.txt"}, usage=Usage(1000, 40)),
        Reply("Wrote a.txt.", Usage(1100, 20, cache_read_input_tokens=400)),
    ]
    second = [
        ToolCall("apply_patch", {"input": ADD_NOTES_PATCH}, usage=Usage(1200, 60)),
        Reply(DONE, Usage(1300, 30)),
    ]
    codex.server.set_script(*first, *second)
    served_before = len(codex.server.main_requests)

    result = run_loop(codex, "--max-iterations", "5")

    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["status"], summary["iterations"]) == ("completed", 2)
    assert (codex.project / "a.txt").read_text() == "a\n"
    assert (codex.project / "notes.txt").read_text() == "hello from the mock\n"
    one, two = iterations(codex, result)
    assert [one["completion_signal_found"], two["completion_signal_found"]] == [False, True]
    assert (one["tokens_input"], one["tokens_output"], one["tokens_cache_read"]) == (2100, 60, 400)
    assert (two["tokens_input"], two["tokens_output"], two["tokens_cache_read"]) == (2500, 90, 0)
    price = price_for(MODEL)
    if price is not None:  # Codex reports no USD: the engine prices the tokens it counted
        assert one["cost_source"] == "estimated"
        assert one["cost_usd"] == pytest.approx(price.cost(TokenUsage(2100, 60, 400)))
    assert one["agent_session_id"] != two["agent_session_id"]  # a fresh session each time
    requests = codex.server.main_requests[served_before:]
    assert len(requests) == 4
    prompt = input_texts(requests[0])[-1]
    assert prompt.startswith("Write a.txt, then notes.txt.")
    assert "iteration 1 of at most 5" in prompt
    (patched,) = tool_outputs(requests[3])[-1:]
    assert "A notes.txt" in patched["output"]


def test_an_api_error_iteration_is_recorded_as_an_error(codex):
    codex.server.set_script(ApiError(500, "server_error", "boom"), Reply(DONE))
    write_config(codex, 'error_backoff_cap = "0s"\n')

    result = run_loop(codex, "--max-iterations", "3")

    assert result.returncode == 0, result.stderr
    failed, ok = iterations(codex, result)
    assert (failed["status"], failed["exit_code"]) == ("error", 1)
    assert "high demand" in failed["error_message"]
    assert failed["signals"]["error_class"] == "api_overloaded"
    assert (ok["status"], ok["completion_signal_found"]) == ("ok", True)


def test_a_429_parks_the_loop_until_the_wait_is_over_and_is_never_an_error(codex):
    limited = ApiError(429, "rate_limit_exceeded", "Rate limit reached for requests")
    codex.server.set_script(limited, Reply(DONE))
    write_config(codex, 'usage_limit_wait = "1s"\ncircuit_breaker_threshold = 1\n')

    result = run_loop(codex, "--max-iterations", "3")

    assert result.returncode == 0, result.stderr
    parked, ok = iterations(codex, result)
    assert [parked["status"], ok["status"]] == ["rate_limited", "ok"]
    assert (ok["started_at"] - parked["completed_at"]).total_seconds() >= 0.9


def test_plan_mode_refuses_the_write_and_the_denial_is_surfaced(codex):
    codex.server.set_script(
        ToolCall("apply_patch", {"input": ADD_NOTES_PATCH}),
        Reply("I cannot write here.\n<promise>BLOCKED: writing is refused</promise>"),
    )

    result = run_loop(codex, "--permission-mode", "plan")

    assert result.returncode == 4, result.stderr
    assert "permission denied for apply_patch" in result.stderr
    assert not (codex.project / "notes.txt").exists()
    (only,) = iterations(codex, result)
    assert [d["tool_name"] for d in only["permission_denials"]] == ["apply_patch"]
    assert only["blocked_reason"] == "writing is refused"


# --- the CLI directly ----------------------------------------------------------------------


def shape(event: dict[str, Any]) -> tuple[str, str | None]:
    item = event.get("item")
    return event["type"], item.get("type") if isinstance(item, dict) else None


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_cassette_still_matches_the_pinned_cli(codex, name):
    """Re-record (python -m tests.agents.codex.record_cassettes) when this fails after a bump."""
    run = SCENARIOS[name].play(codex)
    recorded = json.loads((CASSETTES / f"{name}.json").read_text())
    lines = [json.loads(line) for line in (CASSETTES / f"{name}.jsonl").read_text().splitlines()]

    assert run.exit_code == recorded["exit_code"], run.stderr
    assert [shape(e) for e in run.events] == [shape(e) for e in lines]


def test_the_sandboxed_shell_writes_to_its_own_tmpdir_and_never_to_the_machines_tmp(codex):
    """Codex mounts a read-only ``.git`` over every writable root: were ``/tmp`` one,
    bubblewrap would make ``/tmp/.git`` in the machine's ``/tmp`` while the command ran."""
    probe = Path("/tmp") / f"ralphctl-codex-probe-{uuid.uuid4().hex}"
    cmd = f'touch "$TMPDIR/probe" && echo own-tmpdir-writable; touch {probe} || echo tmp-refused'
    codex.server.set_script(ToolCall("exec_command", {"cmd": cmd}), Reply("Probed."))

    run = codex.run("Probe the temp dirs.", "--sandbox", "workspace-write")

    assert run.exit_code == 0, run.stderr
    (output,) = [item["aggregated_output"] for item in run.items("command_execution")]
    assert "own-tmpdir-writable" in output
    assert "tmp-refused" in output
    assert not probe.exists()


def adapter_run(codex: RealCodex, request: AgentRequest) -> tuple[CodexAdapter, CodexRun]:
    adapter = CodexAdapter()
    command = adapter.build_command(request)
    return adapter, codex.run_argv(command.argv, command.stdin.decode(), env=command.env)


def request(codex: RealCodex, **fields: Any) -> AgentRequest:
    return AgentRequest(
        prompt="Say something.",
        workdir=codex.project,
        iteration=1,
        session_id="unused",
        **fields,
    )


def test_resume_continues_the_thread_with_its_history(codex, monkeypatch):
    monkeypatch.setenv("RALPHCTL_CODEX_BIN", str(codex.binary))
    monkeypatch.setenv("CODEX_HOME", str(codex.codex_home))
    codex.server.set_script(Reply("First answer."), Reply("Second answer."))
    _, first = adapter_run(codex, request(codex))

    adapter, second = adapter_run(
        codex, replace(request(codex), resume=True, session_id=first.thread_id)
    )

    assert second.exit_code == 0, second.stderr
    assert second.thread_id == first.thread_id
    parser = adapter.new_parser()
    for line in second.stdout.splitlines():
        parser.feed(line)
    result = parser.finish(exited(0))
    assert (result.final_text, result.session_id) == ("Second answer.", first.thread_id)
    # the CLI reports the thread's total (2000/200); the run itself used one answer's worth
    assert second.of_type("turn.completed")[0]["usage"]["input_tokens"] == 2000
    assert result.tokens == TokenUsage(input=1000, output=100)
    assert "First answer." in input_texts(codex.server.main_requests[-1], role="assistant")


def test_an_isolated_run_runs_neither_the_users_mcp_servers_nor_hooks(codex, monkeypatch):
    """The user's config.toml starts an MCP server and their hooks.json a Stop hook (trusted
    here with --dangerously-bypass-hook-trust); isolated, neither runs. The provider then has
    to come from the agent arguments, as for a user without a config file."""
    monkeypatch.setenv("RALPHCTL_CODEX_BIN", str(codex.binary))
    mcp_marker = codex.project.parent / "mcp-started"
    hook_marker = codex.project.parent / "stop-hook-ran"
    config = codex.codex_home / "config.toml"
    original = config.read_text()
    server = f"import pathlib; pathlib.Path({str(mcp_marker)!r}).touch()"
    config.write_text(
        f"{original}\n[mcp_servers.spy]\ncommand = {sys.executable!r}\nargs = ['-c', {server!r}]\n"
    )
    stop = {"type": "command", "command": f"cat > {hook_marker}"}
    hooks = codex.codex_home / "hooks.json"
    hooks.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [stop]}]}}))
    provider = [
        f"model_provider={_toml('mock2')}",
        f"model_providers.mock2.name={_toml('mock2')}",
        f"model_providers.mock2.base_url={_toml(codex.server.base_url + '/v1')}",
        f"model_providers.mock2.wire_api={_toml('responses')}",
        f"model_providers.mock2.env_key={_toml('RALPHCTL_MOCK_OPENAI_KEY')}",
        "model_providers.mock2.request_max_retries=0",
        f"model={_toml(MODEL)}",
    ]
    trusted = ("--dangerously-bypass-hook-trust",)
    given = (*trusted, *(arg for value in provider for arg in ("-c", value)))
    try:
        codex.server.set_script(Reply("Isolated."))
        _, isolated = adapter_run(codex, request(codex, isolate_config=True, extra_args=given))
        assert isolated.exit_code == 0, isolated.stderr
        assert isolated.items("agent_message")[-1]["text"] == "Isolated."
        assert not mcp_marker.exists()
        assert not hook_marker.exists()

        codex.server.set_script(Reply("Not isolated."))
        _, plain = adapter_run(codex, request(codex, extra_args=trusted))
        assert plain.exit_code == 0, plain.stderr
        # both spies do run without isolation: the checks above are real
        assert mcp_marker.exists()
        assert json.loads(hook_marker.read_text())["last_assistant_message"] == "Not isolated."
    finally:
        config.write_text(original)
        hooks.unlink()


def test_the_threads_own_record_holds_the_tokens_of_each_answer(codex, monkeypatch):
    """What usage recovery reads when a runner died before the closing line."""
    monkeypatch.setenv("CODEX_HOME", str(codex.codex_home))
    before = datetime.now(UTC)

    run = SCENARIOS["apply_patch"].play(codex)

    assert run.exit_code == 0, run.stderr
    expected = TokenUsage(input=2700, output=100, cache_read=300)
    assert session_tokens(run.thread_id) == (ModelTokens(MODEL, expected),)
    assert session_tokens(run.thread_id, before) == (ModelTokens(MODEL, expected),)
    assert session_tokens(run.thread_id, datetime.now(UTC)) == ()
    assert thread_totals(run.thread_id) == expected


def _toml(text: str) -> str:
    return json.dumps(text)
