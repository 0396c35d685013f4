"""The parser over streams recorded from the real Claude Code CLI (tests/realcli/cassettes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralphctl.agents.events import ApiRetry, PermissionDenied, TextChunk, ToolCall, ToolOutput
from ralphctl.domain.model import IterationResult, PermissionDenial
from tests.agents.streams import REAL_CLI_CASSETTES, exited, replay_lines

RECORDED = sorted(REAL_CLI_CASSETTES.glob("*.jsonl"))
pytestmark = pytest.mark.skipif(not RECORDED, reason="no real-CLI cassettes recorded")


def replay_real(name: str) -> tuple[list[object], IterationResult, dict[str, object]]:
    path = REAL_CLI_CASSETTES / f"{name}.jsonl"
    if not path.exists():
        pytest.skip(f"real-CLI cassette {name} not recorded")
    meta = json.loads(path.with_suffix(".json").read_text())
    lines = path.read_bytes().splitlines()
    events, result = replay_lines(lines, exited(meta["exit_code"], meta["stderr_tail"]))
    return list(events), result, meta


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_every_recorded_stream_parses_completely(path: Path) -> None:
    _, result, meta = replay_real(path.stem)
    init = json.loads(path.read_bytes().splitlines()[0])
    last = json.loads(path.read_bytes().splitlines()[-1])

    assert result.unparsed_lines == 0
    assert result.agent_version == meta["claude_code_version"]
    assert result.session_id == init["session_id"]
    assert result.is_error == (last["is_error"] or meta["exit_code"] != 0)
    assert result.cost_usd == last["total_cost_usd"]
    assert result.num_turns == last["num_turns"]
    if "result" in last:
        assert result.final_text == last["result"]
    else:  # error subtypes carry errors[] instead
        assert result.error_message is not None
        assert all(error in result.error_message for error in last["errors"])


def test_write_with_accept_edits() -> None:
    events, result, _ = replay_real("write_accept_edits")

    assert ToolCall("Write", "toolu_mock_000", "notes.txt", edits_files=True) in events
    assert ToolOutput("toolu_mock_000", is_error=False) in events
    assert result.final_text == "Wrote notes.txt."
    assert result.tokens.input == 2700
    assert result.tokens.output == 100


def test_overloaded_api_error() -> None:
    events, result, _ = replay_real("overloaded_529")

    assert result.is_error
    assert result.api_error_status == 529
    assert result.exit_code == 1
    assert any(isinstance(e, TextChunk) and e.text.startswith("API Error: 529") for e in events)


def test_an_api_retry_then_success() -> None:
    events, result, _ = replay_real("overloaded_then_retry")

    assert [e for e in events if isinstance(e, ApiRetry)] == [
        ApiRetry(attempt=1, max_retries=1, error_status=529, error="overloaded")
    ]
    assert not result.is_error
    assert result.final_text == "Recovered."


def test_a_denied_write() -> None:
    events, result, _ = replay_real("permission_denied_write")

    assert any(isinstance(e, PermissionDenied) and e.tool_name == "Write" for e in events)
    assert ToolOutput("toolu_mock_000", is_error=True) in events
    assert result.permission_denials[0] == PermissionDenial(
        "Write", "toolu_mock_000", result.permission_denials[0].detail
    )
    assert result.permission_denials[0].detail.endswith("notes.txt")
    assert not result.is_error


def test_the_session_id_we_pass_is_the_one_reported() -> None:
    _, result, _ = replay_real("session_id")

    assert result.session_id == "5e55a1d0-0000-4000-8000-00000000c0de"


def test_the_cli_budget_cap_ends_the_run_as_an_error() -> None:
    _, result, _ = replay_real("max_budget_exceeded")

    assert result.is_error
    assert result.error_message == (
        "the agent reported an error: error_max_budget_usd, Reached maximum budget ($0.01)"
    )
    assert result.cost_usd == 0.012  # the CLI checks after each answer: it can overshoot
