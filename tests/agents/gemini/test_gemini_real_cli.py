"""`ralphctl run --agent gemini` driving the REAL Gemini CLI (0.61.0) against the mock Gemini API.

One mock serves the whole module (a new script per test); each test gets its own home,
project and database. The CLI makes one attempt per request (harness ``SETTINGS``), so errors
come back at once.
"""

from __future__ import annotations

import json
from datetime import datetime
from subprocess import CompletedProcess
from typing import Any

import pytest

from ralphctl.domain.costs import price_for
from ralphctl.domain.model import TokenUsage
from tests.agents.gemini.harness import RealGemini
from tests.agents.gemini.scenarios import MODEL, QUOTA_MESSAGE
from tests.agents.pinned import run_ralphctl
from tests.mockapi import ApiError, Reply, ToolCall, Usage
from tests.mockapi.gemini import function_names, user_texts

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(120)]

DONE = "All files are written.\n<promise>COMPLETE</promise>"


def ralphctl(gemini: RealGemini, *args: str) -> CompletedProcess[str]:
    database = gemini.home / "ralphctl.db"
    return run_ralphctl(gemini.env, gemini.project, database, *args, timeout=100)


def run_loop(gemini: RealGemini, *extra: str, model: str | None = None) -> CompletedProcess[str]:
    """``ralphctl run --agent gemini`` in the project, without waits between iterations."""
    settings = '[loops.defaults]\nerror_backoff_cap = "0s"\nusage_limit_wait = "1s"\n'
    if model is not None:
        settings += f'model = "{model}"\n'
    (gemini.project / "ralphctl.toml").write_text(settings)
    return ralphctl(
        gemini,
        "run",
        "--task",
        "Write notes.txt.",
        "--agent",
        "gemini",
        "--cooldown",
        "0",
        "--checkpoint-interval",
        "0",
        "--json",
        *extra,
    )


def iterations(gemini: RealGemini, loop_id: str) -> list[dict[str, Any]]:
    shown = ralphctl(gemini, "history", loop_id, "--json")
    assert shown.returncode == 0, shown.stderr
    found: list[dict[str, Any]] = json.loads(shown.stdout)["iterations"]
    return found


def test_a_loop_lands_a_file_through_a_real_tool_call_and_completes_on_the_marker(gemini):
    first = len(gemini.main_requests)
    gemini.server.set_script(
        ToolCall(
            "write_file",
            {"file_path": "notes.txt", "content": "hello\n"},
            usage=Usage(input_tokens=1200, output_tokens=80, cache_read_input_tokens=300),
        ),
        Reply("Wrote notes.txt.", Usage(input_tokens=1500, output_tokens=20)),
        Reply(DONE, Usage(input_tokens=1700, output_tokens=30)),
    )

    result = run_loop(gemini, "--max-iterations", "5", model=MODEL)

    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["status"], summary["iterations"]) == ("completed", 2)
    assert (gemini.project / "notes.txt").read_text() == "hello\n"
    one, two = iterations(gemini, summary["loop_id"])
    # tokens as the mock served them: cached tokens apart from the input
    assert (one["tokens_input"], one["tokens_output"], one["tokens_cache_read"]) == (2700, 100, 300)
    assert (two["tokens_input"], two["tokens_output"]) == (1700, 30)
    # Gemini CLI reports no cost: the engine prices the tokens of the model the CLI named
    price = price_for(MODEL)
    assert price is not None
    assert one["cost_source"] == "estimated"
    assert one["cost_usd"] == pytest.approx(price.cost(TokenUsage(2700, 100, 300)))
    assert [one["completion_signal_found"], two["completion_signal_found"]] == [False, True]
    assert one["agent_session_id"] != two["agent_session_id"]  # a fresh session each time
    requests = gemini.main_requests[first:]
    assert len(requests) == 3
    assert all(f"/models/{MODEL}:streamGenerateContent" in r.path for r in requests)
    assert "write_file" in function_names(requests[0].body)  # acceptEdits: auto_edit
    assert user_texts(requests[0].body)[-1].startswith("Write notes.txt.")


def test_an_api_error_is_an_error_and_a_429_parks_the_loop_without_being_one(gemini):
    gemini.server.set_script(
        ApiError(500, "INTERNAL", "Internal error encountered."),
        ApiError(429, "RESOURCE_EXHAUSTED", QUOTA_MESSAGE),
        Reply(DONE),
    )

    result = run_loop(gemini, "--max-iterations", "5")

    assert result.returncode == 0, result.stderr
    failed, parked, done = iterations(gemini, json.loads(result.stdout)["loop_id"])
    assert failed["status"] == "error"
    assert failed["exit_code"] == 244  # the CLI exits with the HTTP status modulo 256
    assert "Internal error encountered." in failed["error_message"]
    assert (parked["status"], parked["exit_code"]) == ("rate_limited", 173)
    waited = datetime.fromisoformat(done["started_at"]) - datetime.fromisoformat(
        parked["completed_at"]
    )
    assert waited.total_seconds() >= 0.5  # parked until the suggested retry time
    assert done["status"] == "ok"


def test_plan_mode_refusing_a_write_is_a_surfaced_permission_denial(gemini):
    gemini.server.set_script(
        ToolCall("write_file", {"file_path": "x.txt", "content": "x"}),
        Reply("I could not write the file.\n<promise>BLOCKED: writing is denied</promise>"),
    )

    result = run_loop(gemini, "--permission-mode", "plan")

    assert result.returncode == 4, result.stderr
    assert "permission denied for write_file" in result.stderr
    assert not (gemini.project / "x.txt").exists()
    (only,) = iterations(gemini, json.loads(result.stdout)["loop_id"])
    assert [d["tool_name"] for d in only["permission_denials"]] == ["write_file"]
    assert only["blocked_reason"] == "writing is denied"
