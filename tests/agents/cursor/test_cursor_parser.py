"""The Cursor stream parser, over the Cursor cassettes (built from the documented format: the
CLI is not on a package registry, see cassettes/cursor/README.md) and hand-made lines."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ralphctl.agents.events import (
    Finished,
    PermissionDenied,
    RawLine,
    SessionStarted,
    TextChunk,
    ToolCall,
    ToolOutput,
)
from ralphctl.domain.analyzer import ErrorClass, classify_error, edited_files
from ralphctl.domain.model import ModelTokens, PermissionDenial, TokenUsage
from ralphctl.domain.usage_limits import LimitSource, detect_usage_limit
from tests.agents.cursor.streams import CASSETTES, cassette_lines, replay, replay_lines, sidecar
from tests.agents.streams import exited

RECORDED = sorted(path.stem for path in CASSETTES.glob("*.jsonl"))
SESSION = "4b7e1f0a-92c3-4d5e-8f61-2a9b0c3d4e5f"
NOW = 1_800_000_000.0


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


@pytest.mark.parametrize("name", RECORDED)
def test_every_cassette_parses_without_stray_lines_and_errors_match_the_exit(name: str) -> None:
    _, result = replay(name)

    assert result.unparsed_lines == 0
    assert result.is_error == (sidecar(name)["exit_code"] != 0)
    assert result.cost_usd is None  # Cursor reports no cost in USD


def test_the_final_text_is_the_last_message_not_cursors_joined_result() -> None:
    events, result = replay("read_write")

    assert result.final_text == "SUMMARY.md is written.\n<promise>DONE</promise>"
    assert result.session_id == SESSION
    assert result.model == "GPT-5"
    assert events[0] == SessionStarted(SESSION, "GPT-5")
    assert isinstance(events[-1], Finished)


def test_the_prompt_echo_and_a_file_read_never_reach_the_text() -> None:
    events, result = replay("read_write")

    texts = "".join(event.text for event in events if isinstance(event, TextChunk))
    assert "Iteration 1 of 10" not in texts
    assert "when finished" not in texts  # the README's content, read by a tool
    assert result.final_text.count("<promise>DONE</promise>") == 1


def test_tool_calls_are_named_by_their_key_and_writes_count_as_edits() -> None:
    events, result = replay("read_write")

    calls = [event for event in events if isinstance(event, ToolCall)]
    assert [(c.name, c.tool_use_id, c.summary, c.edits_files) for c in calls] == [
        ("read", "call_r1", "README.md", False),
        ("write", "call_w1", "SUMMARY.md", True),
    ]
    outputs = [event for event in events if isinstance(event, ToolOutput)]
    assert outputs == [ToolOutput("call_r1"), ToolOutput("call_w1")]
    assert edited_files(result)


def test_partial_output_pieces_make_the_text_once() -> None:
    events, result = replay("partial_output")

    assert result.final_text == "SUMMARY.md is written.\n<promise>DONE</promise>"
    pieces = [event.text for event in events if isinstance(event, TextChunk)]
    assert pieces == [
        "Reading",
        " README.md.",
        "SUMMARY.md ",
        "is written.",
        "\n<promise>",
        "DONE</promise>",
    ]
    assert all(event.delta for event in events if isinstance(event, TextChunk))


def test_a_shell_command_refused_by_the_rules_is_a_denial() -> None:
    events, result = replay("shell_rejected")

    denial = PermissionDenial("shell", "call_s1", "Command not allowed by the permission rules")
    assert result.permission_denials == (denial,)
    assert PermissionDenied("shell", denial.detail, "call_s1") in events
    assert ToolOutput("call_s1", is_error=True) in events
    assert not result.is_error  # the run went on and answered
    assert not edited_files(result)


def test_a_function_tool_and_reported_usage_are_read() -> None:
    events, result = replay("function_tool_with_usage")

    call = next(event for event in events if isinstance(event, ToolCall))
    assert (call.name, call.summary) == ("web_search", "ralph loop")
    assert ToolOutput("call_f1", is_error=True) in events
    tokens = TokenUsage(input=5200, output=310, cache_read=1800)
    assert result.tokens == tokens
    assert result.model_tokens == (ModelTokens("GPT-5", tokens),)


def test_a_run_without_usage_has_no_tokens_to_price() -> None:
    _, result = replay("read_write")

    assert result.tokens == TokenUsage()
    assert result.model_tokens == ()


def test_a_usage_limit_on_stderr_parks_the_loop() -> None:
    _, result = replay("usage_limit_no_result")

    assert result.truncated
    assert (result.api_error_status, result.assistant_error) == (429, "rate_limit")
    assert result.final_text == "Reading README.md first."
    limit = detect_usage_limit(result, NOW)
    assert limit is not None
    assert limit.source is LimitSource.ASSISTANT_ERROR
    assert "usage limit" in (result.error_message or "")


def test_a_missing_login_is_an_auth_error() -> None:
    events, result = replay("not_logged_in")

    assert events == []
    assert (result.api_error_status, result.assistant_error) == (401, "authentication_failed")
    assert classify_error(result) is ErrorClass.AUTH


def test_a_failed_result_states_its_error() -> None:
    failed = {
        "type": "result",
        "subtype": "error",
        "is_error": True,
        "result": "The model provider is overloaded, try again later",
        "session_id": SESSION,
    }

    _, result = replay_lines([line(failed)], exited(1))

    assert classify_error(result) is ErrorClass.API_OVERLOADED
    assert result.terminal_reason == "error"
    assert result.error_message == (
        "the agent reported an error: The model provider is overloaded, try again later"
    )


def test_an_error_line_is_the_stated_error() -> None:
    error = {"type": "error", "message": "Unauthorized: the API key was revoked"}

    _, result = replay_lines([line(error)], exited(1, "exiting"))

    assert result.api_error_status == 401


def test_a_clean_run_with_a_bad_exit_is_an_error_with_the_exit_code() -> None:
    _, result = replay_lines(cassette_lines("read_write"), exited(3, "boom"))

    assert result.is_error
    assert result.error_message == "the agent exited with code 3; stderr tail: boom"


def test_cursors_joined_result_is_the_text_only_when_no_message_came() -> None:
    done = {"type": "result", "subtype": "success", "is_error": False, "result": "All done."}

    _, result = replay_lines([line(done)], exited(0))

    assert result.final_text == "All done."


def test_stray_lines_are_raw_lines_and_unknown_events_are_ignored() -> None:
    query = {"type": "interaction_query", "subtype": "request", "session_id": SESSION}

    events, result = replay_lines([b"Update available", line(query), b""], exited(0))

    assert events == [RawLine("Update available")]
    assert result.unparsed_lines == 2
