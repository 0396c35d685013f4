"""The Gemini CLI stream parser, over streams recorded from the real CLI (cassettes/gemini) and
over hand-made lines for what the recordings do not show."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from ralphctl.agents.events import (
    Finished,
    PermissionDenied,
    RateLimitSignal,
    RawLine,
    SessionStarted,
    TextChunk,
    ToolCall,
    ToolOutput,
)
from ralphctl.domain.analyzer import ErrorClass, classify_error
from ralphctl.domain.model import ModelTokens, TokenUsage
from ralphctl.domain.usage_limits import LimitSource, detect_usage_limit
from tests.agents.gemini.streams import (
    CASSETTES,
    cassette_lines,
    line,
    replay,
    replay_lines,
    sidecar,
)
from tests.agents.streams import exited

RECORDED = sorted(path.stem for path in CASSETTES.glob("*.jsonl"))


@pytest.mark.parametrize("name", RECORDED)
def test_every_recorded_stream_parses_completely(name: str) -> None:
    _, result = replay(name)

    assert result.unparsed_lines == 0
    assert not result.truncated
    assert result.session_id is not None
    assert result.is_error == (sidecar(name)["exit_code"] != 0)
    assert result.cost_usd is None  # Gemini CLI reports tokens only


def test_a_text_reply_is_the_final_text_and_the_prompt_echo_is_not() -> None:
    events, result = replay("text_reply")

    assert result.final_text == "All done."
    assert [e for e in events if isinstance(e, TextChunk)] == [TextChunk("All done.", delta=True)]
    assert "Do the task" not in result.final_text
    assert isinstance(events[0], SessionStarted)
    assert events[0].model == "auto"
    assert isinstance(events[-1], Finished)


def test_tokens_are_the_routed_models_and_the_router_with_none_is_left_out() -> None:
    _, result = replay("text_reply")

    assert result.tokens == TokenUsage(input=1000, output=100)
    assert result.model == "gemini-3.8-flash"  # init said "auto"
    assert result.model_tokens == (ModelTokens("gemini-3.8-flash", TokenUsage(1000, 100)),)


def test_a_write_file_call_edits_files_and_the_final_text_is_what_came_after_it() -> None:
    events, result = replay("write_file")

    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert (call.name, call.summary, call.edits_files) == ("write_file", "notes.txt", True)
    assert ToolOutput(call.tool_use_id, is_error=False) in events
    assert result.final_text == "Wrote notes.txt."  # not "I will write the notes."
    assert result.tool_uses[0].edits_files
    assert result.session_id == "5e55a1d0-0000-4000-8000-00000000a11e"


def test_cached_tokens_are_counted_apart_from_the_input() -> None:
    _, result = replay("write_file")

    # the mock served 1200+300 cached and 1500 prompt tokens, 80+20 output tokens
    assert result.tokens == TokenUsage(input=2700, output=100, cache_read=300)


def test_plan_mode_refusing_a_write_is_a_permission_denial() -> None:
    events, result = replay("plan_mode_denied")

    (denied,) = [e for e in events if isinstance(e, PermissionDenied)]
    assert denied.tool_name == "write_file"
    assert "Plan Mode" in denied.message
    assert [d.tool_name for d in result.permission_denials] == ["write_file"]
    assert result.permission_denials[0].tool_use_id == result.tool_uses[0].tool_use_id
    assert not result.is_error
    assert result.final_text == "I could not write the file."


def test_a_tool_the_mode_does_not_offer_is_a_permission_denial() -> None:
    _, result = replay("default_mode_shell")

    assert [d.tool_name for d in result.permission_denials] == ["run_shell_command"]


def test_a_500_is_an_api_error_with_its_status() -> None:
    _, result = replay("server_error_500")

    assert result.is_error
    assert result.exit_code == 244  # 500 modulo 256
    assert result.api_error_status == 500
    assert result.error_message is not None
    assert "Internal error encountered." in result.error_message
    assert classify_error(result) is ErrorClass.API_ERROR


def test_a_503_is_an_overloaded_api() -> None:
    _, result = replay("overloaded_503")

    assert result.api_error_status == 503  # told by the exit status 247 only
    assert classify_error(result) is ErrorClass.API_OVERLOADED


def test_a_429_is_a_rejected_rate_limit_reset_after_the_suggested_delay() -> None:
    events, result = replay("rate_limited_429")

    assert result.api_error_status == 429
    assert classify_error(result) is ErrorClass.RATE_LIMITED
    (signal,) = [e for e in events if isinstance(e, RateLimitSignal)]
    closing = json.loads(cassette_lines("rate_limited_429")[-1])
    at = datetime.fromisoformat(closing["timestamp"].replace("Z", "+00:00")).timestamp()
    assert signal.resets_at == pytest.approx(at + 1.0)
    assert result.rate_limit is not None
    assert result.rate_limit.status == "rejected"
    limit = detect_usage_limit(result, now=at)
    assert limit is not None
    assert limit.source is LimitSource.RATE_LIMIT_EVENT
    assert limit.reset_known
    assert limit.resets_at == pytest.approx(at + 1.0)


def test_a_daily_quota_is_a_daily_limit() -> None:
    result_line = {
        "type": "result",
        "timestamp": "2026-11-23T10:00:00.000Z",
        "status": "error",
        "error": {"type": "TerminalQuotaError", "message": "You have exhausted your daily quota."},
        "stats": {},
    }
    _, result = replay_lines([line(result_line)], exited(1))

    assert result.api_error_status == 429
    assert result.rate_limit is not None
    assert result.rate_limit.limit_type == "daily"
    assert result.rate_limit.resets_at is None  # no delay stated: the engine's default wait


def test_auth_failure_before_any_output_is_an_auth_error() -> None:
    _, result = replay_lines([], exited(41, "Invalid auth method selected."))

    assert result.truncated
    assert result.is_error
    assert "Invalid auth method selected." in (result.error_message or "")
    assert classify_error(result) is ErrorClass.AUTH


def test_a_turn_limit_is_an_agent_limit() -> None:
    result_line = {
        "type": "result",
        "status": "error",
        "error": {"type": "FatalTurnLimitedError", "message": "Reached max session turns"},
        "stats": {},
    }
    _, result = replay_lines([line(result_line)], exited(53))

    assert result.terminal_reason == "max_turns"
    assert classify_error(result) is ErrorClass.AGENT_LIMIT


def test_a_killed_cli_is_truncated_and_keeps_what_it_said() -> None:
    lines = cassette_lines("write_file")[:-1]  # no result line

    _, result = replay_lines(lines, exited(-9, "", timed_out=True))

    assert result.truncated
    assert result.is_error
    assert result.final_text == "Wrote notes.txt."
    assert result.tokens == TokenUsage()  # the totals come with the result only
    assert classify_error(result) is ErrorClass.TIMEOUT


def test_garbage_lines_are_raw_lines_and_blank_ones_nothing() -> None:
    lines = [b"Ripgrep is not available.", b"", b"[1, 2]", *cassette_lines("text_reply")]

    events, result = replay_lines(lines)

    assert [e for e in events if isinstance(e, RawLine)] == [
        RawLine("Ripgrep is not available."),
        RawLine("[1, 2]"),
    ]
    assert result.unparsed_lines == 3
    assert result.final_text == "All done."


def test_thoughts_count_as_output() -> None:
    stats = {
        "models": {
            "gemini-3-pro": {
                "total_tokens": 1500,
                "input_tokens": 1000,
                "output_tokens": 100,
                "cached": 200,
                "input": 800,
            }
        }
    }
    _, result = replay_lines([line({"type": "result", "status": "success", "stats": stats})])

    assert result.tokens == TokenUsage(input=800, output=500, cache_read=200)


def test_an_error_event_explains_a_failed_result_without_a_message() -> None:
    lines = [
        line({"type": "error", "severity": "warning", "message": "Loop detected"}),
        line({"type": "error", "severity": "error", "message": "Invalid stream"}),
        line({"type": "result", "status": "error", "stats": {}}),
    ]
    _, result = replay_lines(lines, exited(1))

    assert result.error_message == "the agent reported an error: Invalid stream"


@pytest.mark.parametrize(
    "message",
    ["[API Error: Resource has been exhausted (e.g. check quota).]", "429 RESOURCE_EXHAUSTED"],
)
def test_a_quota_message_is_a_429_whatever_the_exit_status(message: str) -> None:
    result_line = {"type": "result", "status": "error", "error": {"message": message}}

    _, result = replay_lines([line(result_line)], exited(1))

    assert result.api_error_status == 429
