"""The OpenCode parser on streams the real CLI printed (cassettes) and on edge cases."""

from __future__ import annotations

import pytest

from ralphctl.agents.events import (
    MessageUsage,
    PermissionDenied,
    RateLimitSignal,
    RawLine,
    SessionStarted,
    TextChunk,
    ToolCall,
    ToolOutput,
    UsageReported,
)
from ralphctl.domain.analyzer import ErrorClass, classify_error, edited_files
from ralphctl.domain.costs import CostSource, Price, iteration_cost
from ralphctl.domain.model import ModelTokens, TokenUsage
from ralphctl.domain.usage_limits import LimitSource, detect_usage_limit
from tests.agents.opencode.streams import (
    MODEL,
    cassette_lines,
    exited,
    line,
    replay,
    replay_lines,
)

STEP_START = line("step_start", part={"type": "step-start", "messageID": "msg_1"})


def step_finish(message_id: str = "msg_1", cost: float = 0, **tokens: object) -> bytes:
    counts: dict[str, object] = {"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0}}
    counts.update(tokens)
    part = {"type": "step-finish", "messageID": message_id, "reason": "stop", "tokens": counts}
    return line("step_finish", part={**part, "cost": cost})


def text(value: str, message_id: str = "msg_1") -> bytes:
    return line("text", part={"type": "text", "messageID": message_id, "text": value})


def error(name: str = "APIError", **data: object) -> bytes:
    return line("error", error={"name": name, "data": {"message": "it failed", **data}})


# --- recorded streams --------------------------------------------------------------------


def test_a_text_reply_gives_its_text_tokens_reported_cost_and_session():
    events, result = replay("text_reply")

    assert isinstance(events[0], SessionStarted)
    assert events[0].session_id == result.session_id
    assert result.session_id is not None
    assert result.session_id.startswith("ses_")
    assert result.final_text == "All done."
    assert not result.is_error
    assert result.tokens == TokenUsage(input=1000, output=100)
    assert result.cost_usd == pytest.approx((1000 * 2 + 100 * 8) / 1e6)
    assert result.model_tokens == (ModelTokens(MODEL, result.tokens),)
    assert [type(e) for e in events[1:]] == [TextChunk, MessageUsage, UsageReported]


def test_a_write_call_is_a_file_edit_and_the_final_text_is_the_last_steps_alone():
    events, result = replay("write_file")

    assert result.final_text == "Wrote notes.txt."  # not "I will write the notes."
    (write,) = result.tool_uses
    assert (write.name, write.summary, write.edits_files) == ("write", "notes.txt", True)
    assert write.tool_use_id == "call_mock_000"
    assert ToolCall("write", "call_mock_000", "notes.txt", True) in events
    assert ToolOutput("call_mock_000", False) in events
    assert edited_files(result)
    assert result.tokens == TokenUsage(input=2700, output=100, cache_read=300)
    assert result.num_turns == 2
    assert result.terminal_reason == "stop"


def test_tool_output_never_reaches_the_final_text():
    _, result = replay("bash_command")

    (bash,) = result.tool_uses
    assert (bash.name, bash.edits_files) == ("bash", False)
    assert bash.summary == "echo hello > hello.txt && cat hello.txt"
    assert result.final_text == "Wrote hello.txt."
    assert "hello\n" not in result.final_text


def test_a_write_refused_by_the_plan_agent_is_a_permission_denial():
    events, result = replay("plan_denied_write")

    (denial,) = result.permission_denials
    assert (denial.tool_name, denial.tool_use_id, denial.detail) == (
        "write",
        "call_mock_000",
        "notes.txt",
    )
    (denied,) = [e for e in events if isinstance(e, PermissionDenied)]
    assert denied.message.startswith("The user has specified a rule")
    assert ToolOutput("call_mock_000", True) in events
    assert not result.is_error
    assert result.final_text == "I could not write the file."
    assert not edited_files(result)  # the refused write changed nothing


def test_an_ask_auto_rejected_headless_is_a_denial_and_ends_the_run_without_text():
    _, result = replay("ask_rejected_bash")

    assert [d.tool_name for d in result.permission_denials] == ["bash"]
    assert result.final_text == ""
    assert not result.is_error
    assert result.terminal_reason == "tool-calls"


def test_an_unauthorized_answer_is_an_auth_error():
    _, result = replay("unauthorized_401")

    assert result.is_error
    assert result.exit_code == 1
    assert result.api_error_status == 401
    assert result.error_message is not None
    assert "Incorrect API key provided" in result.error_message
    assert classify_error(result) is ErrorClass.AUTH
    assert result.session_id is not None


def test_a_429_after_the_clis_retries_is_a_rejected_rate_limit_that_parks_the_loop():
    events, result = replay("rate_limited_429")

    (signal,) = [e for e in events if isinstance(e, RateLimitSignal)]
    timestamp = float(cassette_lines("rate_limited_429")[0].split(b'"timestamp":')[1][:13]) / 1000
    assert signal == RateLimitSignal("rejected", timestamp, None)  # retry-after: 0
    assert result.api_error_status == 429
    assert classify_error(result) is ErrorClass.RATE_LIMITED
    limit = detect_usage_limit(result, timestamp, default_wait_s=60)
    assert limit is not None
    assert (limit.source, limit.reset_known) == (LimitSource.RATE_LIMIT_EVENT, False)


# --- edge cases ---------------------------------------------------------------------------


def test_a_stated_retry_after_becomes_the_reset_time():
    headers = {"Retry-After": "30"}
    _, result = replay_lines([error(statusCode=429, responseHeaders=headers)], exited(1))

    assert result.rate_limit is not None
    assert result.rate_limit.resets_at == pytest.approx(1_795_462_000 + 30)


@pytest.mark.parametrize(
    ("data", "name", "expected"),
    [
        ({"statusCode": 503}, "APIError", ErrorClass.API_OVERLOADED),
        (
            {"statusCode": 500, "message": "Provider is overloaded"},
            "APIError",
            ErrorClass.API_OVERLOADED,
        ),
        ({"statusCode": 400}, "APIError", ErrorClass.API_ERROR),
        ({"statusCode": 403}, "APIError", ErrorClass.AUTH),
        ({}, "ProviderAuthError", ErrorClass.AUTH),
        ({}, "UnknownError", ErrorClass.AGENT_EXIT),
    ],
)
def test_error_lines_map_to_the_breakers_error_classes(data, name, expected):
    _, result = replay_lines([error(name, **data)], exited(1))

    assert result.is_error
    assert classify_error(result) is expected


def test_a_step_that_never_finished_is_a_truncated_crash():
    _, result = replay_lines([STEP_START, text("half an answer")], exited(None, interrupted=False))

    assert result.truncated
    assert result.is_error
    assert classify_error(result) is ErrorClass.CRASH
    assert result.error_message is not None
    assert "no finished step" in result.error_message


def test_no_output_at_all_with_exit_1_keeps_the_stderr_in_the_message():
    _, result = replay_lines([], exited(1, stderr="Error: Session not found"))

    assert result.truncated
    assert result.error_message is not None
    assert "Session not found" in result.error_message


def test_without_a_reported_cost_the_tokens_are_priced_by_the_engine():
    _, result = replay_lines([STEP_START, text("Done."), step_finish(input=1000, output=100)])

    assert result.cost_usd is None
    assert result.model_tokens == (ModelTokens(MODEL, TokenUsage(1000, 100)),)
    cost = iteration_cost(result, {"mock/mock-coder": Price(1, 2, 0, 0)})
    assert cost.usd == pytest.approx(0.0012)
    assert cost.source is CostSource.ESTIMATED


def test_reasoning_tokens_count_as_output_and_cache_tokens_are_kept():
    cache = {"read": 7, "write": 3}
    _, result = replay_lines([STEP_START, step_finish(input=1, output=2, reasoning=4, cache=cache)])

    assert result.tokens == TokenUsage(input=1, output=6, cache_read=7, cache_write=3)


def test_texts_of_one_message_are_joined_and_a_new_message_replaces_them():
    lines = [
        STEP_START,
        text("first"),
        text("second"),
        step_finish(),
        line("step_start", part={"messageID": "msg_2"}),
        text("DONE", "msg_2"),
        step_finish("msg_2"),
    ]
    _, result = replay_lines(lines)

    assert result.final_text == "DONE"
    _, only_first = replay_lines(lines[:4])
    assert only_first.final_text == "first\nsecond"


def test_garbage_lines_are_raw_lines_counted_as_unparsed_and_blank_ones_ignored():
    events, result = replay_lines([b"\x1b[93m! warning", b"", b"[1, 2]", STEP_START, step_finish()])

    assert [e for e in events if isinstance(e, RawLine)] == [
        RawLine("\ufffd[93m! warning"),
        RawLine("[1, 2]"),
    ]
    assert result.unparsed_lines == 3
    assert not result.is_error


def test_a_timeout_is_an_error_even_after_finished_steps():
    _, result = replay_lines([STEP_START, text("x"), step_finish()], exited(None, timed_out=True))

    assert result.is_error
    assert classify_error(result) is ErrorClass.TIMEOUT


def test_without_a_model_the_tokens_are_unnamed():
    _, result = replay("text_reply", model=None)

    assert result.model is None
    assert result.model_tokens == ()
    assert result.tokens == TokenUsage(input=1000, output=100)
