"""The Amp stream parser, over the Amp cassettes (built from the pinned CLI's event writer; two
are the real CLI's output against a local server) and hand-made lines."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ralphctl.agents.events import (
    Finished,
    MessageUsage,
    RawLine,
    SessionStarted,
    TextChunk,
    ToolCall,
    ToolOutput,
)
from ralphctl.domain.analyzer import ErrorClass, classify_error, edited_files
from ralphctl.domain.model import TokenUsage
from ralphctl.domain.usage_limits import LimitSource, detect_usage_limit
from tests.agents.amp.streams import CASSETTES, cassette_lines, replay, replay_lines, sidecar
from tests.agents.streams import exited

RECORDED = sorted(path.stem for path in CASSETTES.glob("*.jsonl"))
NOW = 1_800_000_000.0


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


@pytest.mark.parametrize("name", RECORDED)
def test_every_cassette_parses_without_stray_lines_and_errors_match_the_exit(name: str) -> None:
    _, result = replay(name, timed_out=name == "killed")

    assert result.unparsed_lines == 0
    assert result.is_error == (sidecar(name)["exit_code"] != 0)
    assert result.cost_usd is None  # Amp reports no cost in USD
    assert result.model is None  # nor the model it used


def test_the_final_text_is_the_result_and_the_prompt_echo_never_counts() -> None:
    events, result = replay("text_reply")

    assert (
        result.final_text == "hello.py already greets; nothing to change.\n<promise>DONE</promise>"
    )
    assert result.session_id == "T-5f0c2a7e-3b1d-4c8e-9a47-0e6d2b9c1f3a"
    assert events[0] == SessionStarted("T-5f0c2a7e-3b1d-4c8e-9a47-0e6d2b9c1f3a")
    texts = [event.text for event in events if isinstance(event, TextChunk)]
    assert texts == [result.final_text]  # the echoed prompt, which names the marker, is not one
    assert isinstance(events[-1], Finished)
    assert not events[-1].is_error


def test_tokens_are_the_sum_of_every_message_usage() -> None:
    events, result = replay("edit_and_test")

    per_message = [event for event in events if isinstance(event, MessageUsage)]
    assert [usage.tokens.input for usage in per_message] == [1800, 2100, 2300, 2500]
    assert len({usage.message_id for usage in per_message}) == 4
    assert result.tokens == TokenUsage(input=8700, output=195, cache_read=6800, cache_write=1500)
    assert result.num_turns == 4


def test_amp_file_tools_count_as_edits_and_its_shell_does_not() -> None:
    events, result = replay("edit_and_test")

    calls = [event for event in events if isinstance(event, ToolCall)]
    assert [(call.name, call.edits_files) for call in calls] == [
        ("Read", False),
        ("edit_file", True),
        ("Bash", False),
    ]
    assert [call.summary for call in calls] == [
        "/work/project/pipeline.py",
        "/work/project/hello.py",
        "pytest -q",
    ]
    assert [(use.name, use.edits_files) for use in result.tool_uses] == [
        ("Read", False),
        ("edit_file", True),
        ("Bash", False),
    ]
    assert edited_files(result)
    outputs = [event.tool_use_id for event in events if isinstance(event, ToolOutput)]
    assert outputs == ["toolu_00", "toolu_01", "toolu_02"]


def test_a_marker_in_tool_output_never_reaches_the_final_text() -> None:
    _, result = replay("edit_and_test")

    assert result.final_text.endswith("the test passes.\n<promise>DONE</promise>")
    assert "appears in this tool output" not in result.final_text


def test_a_tool_needing_approval_is_a_denial_that_ends_the_run() -> None:
    _, result = replay("approval_needed")

    assert result.is_error
    assert [denial.tool_name for denial in result.permission_denials] == ["Bash"]
    assert "require user approval" in (result.error_message or "")
    assert result.terminal_reason == "error_during_execution"


def test_a_rate_limit_parks_the_loop() -> None:
    _, result = replay("rate_limited")

    assert result.api_error_status == 429
    assert result.assistant_error == "rate_limit"
    assert classify_error(result) is ErrorClass.RATE_LIMITED
    limit = detect_usage_limit(result, NOW)
    assert limit is not None
    assert limit.source is LimitSource.ASSISTANT_ERROR
    assert not limit.reset_known


def test_out_of_credits_is_a_billing_error_a_person_must_fix() -> None:
    _, result = replay("out_of_credits")

    assert (result.api_error_status, result.assistant_error) == (402, "billing_error")
    assert classify_error(result) is ErrorClass.AUTH
    assert detect_usage_limit(result, NOW) is None


def test_an_overloaded_provider_keeps_the_tokens_spent_before_it() -> None:
    _, result = replay("overloaded")

    assert classify_error(result) is ErrorClass.API_OVERLOADED
    assert result.tokens == TokenUsage(input=900, output=12)
    assert result.final_text == "Looking at hello.py first."


def test_a_killed_run_is_truncated_and_keeps_what_it_did() -> None:
    _, result = replay("killed", timed_out=True)

    assert result.truncated
    assert result.timed_out
    assert classify_error(result) is ErrorClass.TIMEOUT
    assert [(use.name, use.edits_files) for use in result.tool_uses] == [("create_file", True)]
    assert "timed out" in (result.error_message or "")


def test_a_rejected_key_seen_from_the_real_cli_is_an_auth_error() -> None:
    events, result = replay("offline_unauthorized")

    assert events == []
    assert result.truncated
    assert (result.api_error_status, result.assistant_error) == (401, "authentication_failed")
    assert classify_error(result) is ErrorClass.AUTH
    assert "Invalid or missing API key" in (result.error_message or "")


def test_an_unknown_server_seen_from_the_real_cli_is_a_crash_with_its_words() -> None:
    _, result = replay("offline_no_server_api")

    assert result.api_error_status is None
    assert classify_error(result) is ErrorClass.CRASH
    assert "getUserInfo failed: 404" in (result.error_message or "")


def test_a_success_with_a_bad_exit_is_an_error_with_the_exit_code() -> None:
    _, result = replay_lines(cassette_lines("text_reply"), exited(2, "warning: trailing"))

    assert result.is_error
    assert result.error_message == "the agent exited with code 2; stderr tail: warning: trailing"
    assert result.api_error_status is None


def test_stray_lines_are_raw_lines_and_blank_ones_nothing() -> None:
    parser_events, result = replay_lines([b"Loading plugins...", b"", b"  "], exited(0))

    assert parser_events == [RawLine("Loading plugins...")]
    assert result.unparsed_lines == 3
    assert result.truncated


def test_a_subagent_message_adds_no_usage() -> None:
    subagent = {
        "type": "assistant",
        "message": {"role": "assistant", "content": [], "usage": {"input_tokens": 99}},
        "parent_tool_use_id": "toolu_task",
        "session_id": "T-1",
    }
    events, result = replay_lines([line(subagent)], exited(0))

    assert not any(isinstance(event, MessageUsage) for event in events)
    assert result.tokens == TokenUsage()
