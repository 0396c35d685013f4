"""The Codex stream parser on streams recorded from the real CLI 0.169.0 (cassettes/codex)
and on hand-made lines for what the mock cannot make the CLI print."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ralphctl.agents.codex_stream import CodexStreamParser
from ralphctl.agents.events import (
    ApiRetry,
    Finished,
    PermissionDenied,
    RateLimitSignal,
    RawLine,
    SessionStarted,
    TextChunk,
    ToolCall,
    ToolOutput,
)
from ralphctl.domain.analyzer import ErrorClass, classify_error, edited_files
from ralphctl.domain.model import ModelTokens, TokenUsage
from ralphctl.domain.usage_limits import LimitSource, detect_usage_limit
from tests.agents.codex.streams import (
    RECORDED_AT,
    cassette_lines,
    line,
    replay,
    replay_lines,
)
from tests.agents.streams import exited

THREAD = {"type": "thread.started", "thread_id": "01a209dc-0000-7000-8000-000000000001"}
TURN = {"type": "turn.started"}
DONE = {
    "type": "turn.completed",
    "usage": {"input_tokens": 1200, "cached_input_tokens": 200, "output_tokens": 30},
}


def message(text: str, item_id: str = "item_0") -> dict[str, object]:
    return {
        "type": "item.completed",
        "item": {"id": item_id, "type": "agent_message", "text": text},
    }


def failed(text: str) -> list[bytes]:
    return [
        line(THREAD),
        line(TURN),
        line({"type": "error", "message": text}),
        line({"type": "turn.failed", "error": {"message": text}}),
    ]


# --- recorded streams ----------------------------------------------------------------------


def test_a_text_reply_gives_its_text_session_and_tokens():
    events, result = replay("text_reply")

    assert not result.is_error
    assert result.final_text == "All done."
    assert result.session_id == cassette_lines("text_reply")[0].split(b'"')[-2].decode()
    assert result.tokens == TokenUsage(input=1000, output=100)
    assert result.cost_usd is None  # Codex reports no USD: the engine prices the tokens
    assert result.model_tokens == (ModelTokens("gpt-5.5", TokenUsage(input=1000, output=100)),)
    assert not result.truncated
    assert isinstance(events[0], SessionStarted)
    assert TextChunk("All done.") in events
    assert isinstance(events[-1], Finished)


def test_the_final_text_is_the_last_agent_message_never_a_preamble_or_tool_output():
    events, result = replay("shell_command")

    assert result.final_text == "Wrote hello.txt."
    assert "hello" not in result.final_text.replace("hello.txt", "")
    assert [e.text for e in events if isinstance(e, TextChunk)] == [
        "Writing hello.txt.",
        "Wrote hello.txt.",
    ]


def test_a_shell_call_is_a_tool_call_of_its_inner_command_with_its_output():
    events, result = replay("shell_command")

    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert call.name == "exec_command"
    assert call.summary == "echo hello > hello.txt && cat hello.txt"
    assert not call.edits_files
    assert ToolOutput(call.tool_use_id, is_error=False) in events
    assert [t.name for t in result.tool_uses] == ["exec_command"]


def test_a_command_run_from_the_default_models_javascript_tool_is_still_a_shell_call():
    events, result = replay("code_mode_exec", model="gpt-6.1-sol")

    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert (call.name, call.summary) == ("exec_command", "echo code > code.txt && echo ok")
    assert result.final_text == "Wrote code.txt."
    assert result.model_tokens == (ModelTokens("gpt-6.1-sol", TokenUsage(input=2500, output=120)),)


def test_a_patch_is_a_file_editing_tool_call_and_tokens_sum_both_requests():
    events, result = replay("apply_patch")

    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert (call.name, call.edits_files) == ("apply_patch", True)
    assert call.summary.endswith("/project/notes.txt")
    assert edited_files(result)
    # 1200 + 1500 uncached input, 300 cached, 80 + 20 output (the mock's usage)
    assert result.tokens == TokenUsage(input=2700, output=100, cache_read=300)


def test_a_write_refused_by_the_read_only_sandbox_is_a_permission_denial():
    events, result = replay("read_only_denied")

    assert not result.is_error
    (denial,) = result.permission_denials
    assert denial.tool_name == "apply_patch"
    assert "read-only sandbox" in denial.detail
    assert not [e for e in events if isinstance(e, ToolCall)]  # the CLI prints no item
    assert result.final_text == "I could not write the file."


@pytest.mark.parametrize(
    ("name", "status", "error_class"),
    [
        ("unauthorized_401", 401, ErrorClass.AUTH),
        ("bad_request_400", 400, ErrorClass.API_ERROR),
        ("server_error_500", None, ErrorClass.API_OVERLOADED),
        ("rate_limited_429", 429, ErrorClass.RATE_LIMITED),
        ("usage_limit_429", 429, ErrorClass.RATE_LIMITED),
    ],
)
def test_api_errors_map_to_their_status_and_error_class(name, status, error_class):
    _, result = replay(name)

    assert result.is_error
    assert result.exit_code == 1
    assert result.api_error_status == status
    assert classify_error(result) is error_class
    assert result.error_message is not None
    assert result.error_message.startswith("the agent reported an error: ")
    assert result.final_text == ""
    assert result.tokens == TokenUsage()
    assert not result.truncated


def test_an_overloaded_server_is_named_so():
    _, result = replay("server_error_500")
    assert result.assistant_error == "overloaded"


def test_a_usage_limit_parks_until_the_time_codex_states():
    events, result = replay("usage_limit_429")

    reset = datetime(2026, 11, 23, 20, 22, tzinfo=UTC).timestamp()
    assert RateLimitSignal("rejected", reset, "usage_limit") in events
    assert result.rate_limit is not None
    assert result.rate_limit.resets_at == reset
    limit = detect_usage_limit(result, RECORDED_AT.timestamp())
    assert limit is not None
    assert (limit.source, limit.resets_at, limit.reset_known) == (
        LimitSource.RATE_LIMIT_EVENT,
        reset,
        True,
    )


def test_a_rate_limited_request_parks_for_the_default_wait():
    _, result = replay("rate_limited_429")

    now = RECORDED_AT.timestamp()
    limit = detect_usage_limit(result, now, default_wait_s=60)
    assert limit is not None
    assert (limit.source, limit.resets_at, limit.reset_known) == (
        LimitSource.HTTP_429,
        now + 60,
        False,
    )


# --- what the recordings do not show -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "now", "expected"),
    [
        ("You’ve hit your usage limit. Try again at 7:19 PM.", "19:17", "2026-11-23 19:19"),
        ("You've hit your usage limit. Try again at 7:19 AM.", "19:17", "2026-11-24 07:19"),
        ("You've hit your usage limit. Try again at 12:05 AM.", "23:50", "2026-11-24 00:05"),
        (
            "You've hit your usage limit. Upgrade to Pro or try again at Dec 1st, 2026 9:30 PM.",
            "19:17",
            "2026-12-01 21:30",
        ),
        (
            "You've hit your usage limit. Try again in 2 hours 5 minutes.",
            "19:17",
            "2026-11-23 21:22",
        ),
    ],
)
def test_the_stated_reset_time_is_read_in_local_time(text, now, expected):
    zone = timezone(timedelta(hours=2))
    at = datetime.fromisoformat(f"2026-11-23 {now}").replace(tzinfo=zone)
    _, result = replay_lines(failed(text), exited(1), now=at)

    assert result.rate_limit is not None
    assert (
        result.rate_limit.resets_at
        == datetime.fromisoformat(expected).replace(tzinfo=zone).timestamp()
    )


def test_a_usage_limit_without_a_time_still_parks_for_the_default_wait():
    _, result = replay_lines(failed("You've hit your usage limit. Try again later."), exited(1))

    assert result.rate_limit is not None
    assert result.rate_limit.resets_at is None
    limit = detect_usage_limit(result, 1000.0, default_wait_s=300)
    assert limit is not None
    assert (limit.resets_at, limit.reset_known) == (1300.0, False)


def test_an_absurd_wait_is_no_reset_time_and_no_crash():
    _, result = replay_lines(
        failed("You've hit your usage limit. Try again in 99999999999 days."), exited(1)
    )
    assert result.rate_limit is not None
    assert result.rate_limit.resets_at is None


def test_a_quota_without_credits_is_an_auth_error_not_a_wait():
    _, result = replay_lines(
        failed("Quota exceeded. Check your plan and billing details."), exited(1)
    )
    assert result.assistant_error == "billing_error"
    assert classify_error(result) is ErrorClass.AUTH
    assert detect_usage_limit(result, 0.0) is None


def test_an_overloaded_503_is_overloaded():
    _, result = replay_lines(
        failed("unexpected status 503 Service Unavailable: overloaded, url: http://x/v1"),
        exited(1),
    )
    assert result.api_error_status == 503
    assert classify_error(result) is ErrorClass.API_OVERLOADED


def test_a_stream_cut_off_without_a_closing_line_is_truncated_and_an_error():
    lines = [*cassette_lines("shell_command")[:-1]]
    _, result = replay_lines(lines, exited(-9, "killed"))

    assert result.truncated
    assert result.is_error
    assert classify_error(result) is ErrorClass.CRASH
    assert result.error_message is not None
    assert "no turn.completed line" in result.error_message
    assert "killed" in result.error_message
    assert result.final_text == "Wrote hello.txt."


def test_retries_are_api_retries_and_the_recovered_run_is_no_error():
    events, result = replay("server_error_retried")

    retries = [e for e in events if isinstance(e, ApiRetry)]
    assert [(r.attempt, r.max_retries) for r in retries] == [(1, 2), (2, 2)]
    assert retries[0].error is not None
    assert "high demand" in retries[0].error
    assert not result.is_error
    assert result.error_message is None
    assert result.final_text == "Recovered."


def test_a_retried_429_names_its_status():
    notice = "Reconnecting... 1/5 (exceeded retry limit, last status: 429 Too Many Requests)"
    events, _ = replay_lines([line(THREAD), line({"type": "error", "message": notice})])
    assert ApiRetry(1, 5, 429, notice) in events


def test_a_declined_command_is_a_permission_denial():
    item = {
        "id": "item_1",
        "type": "command_execution",
        "command": "/bin/bash -lc 'rm -rf build'",
        "aggregated_output": "",
        "exit_code": None,
        "status": "declined",
    }
    events, result = replay_lines(
        [line(THREAD), line({"type": "item.completed", "item": item}), line(DONE)]
    )
    assert PermissionDenied("exec_command", "rm -rf build", "item_1") in events
    assert [d.tool_name for d in result.permission_denials] == ["exec_command"]
    assert ToolOutput("item_1", is_error=True) in events


def test_mcp_and_web_search_items_are_tool_calls():
    mcp = {
        "id": "i1",
        "type": "mcp_tool_call",
        "server": "docs",
        "tool": "search",
        "status": "completed",
    }
    web = {"id": "i2", "type": "web_search", "query": "codex exec json"}
    events, _ = replay_lines(
        [line({"type": "item.started", "item": mcp}), line({"type": "item.completed", "item": web})]
    )
    assert [(e.name, e.summary) for e in events if isinstance(e, ToolCall)] == [
        ("mcp__docs__search", "None"),
        ("web_search", "codex exec json"),
    ]


def test_warnings_reasoning_and_todo_lists_are_not_text():
    warning = {"id": "item_0", "type": "error", "message": "Model metadata for `x` not found."}
    reasoning = {"id": "item_1", "type": "reasoning", "text": "**Thinking**"}
    events, result = replay_lines(
        [
            line(THREAD),
            line({"type": "item.completed", "item": warning}),
            line({"type": "item.completed", "item": reasoning}),
            line(message("Done.", "item_2")),
            line(DONE),
        ]
    )
    assert result.final_text == "Done."
    assert [e for e in events if isinstance(e, TextChunk)] == [TextChunk("Done.")]
    assert not result.is_error


def test_the_last_turn_counts_for_its_usage_is_the_threads_running_total():
    later = {"type": "turn.completed", "usage": {"input_tokens": 3000, "output_tokens": 90}}
    _, result = replay_lines([line(THREAD), line(TURN), line(DONE), line(TURN), line(later)])
    assert result.tokens == TokenUsage(input=3000, output=90)
    assert result.num_turns == 2


def test_a_resumed_threads_earlier_usage_is_taken_off():
    parser = CodexStreamParser(model="gpt-5.5", baseline=TokenUsage(input=600, output=10))
    for chunk in [line(THREAD), line(TURN), line(DONE)]:
        parser.feed(chunk)
    assert parser.finish(exited(0)).tokens == TokenUsage(input=400, output=20, cache_read=200)


def test_garbage_lines_are_raw_lines_and_counted():
    events, result = replay_lines(
        [b"WARNING: proceeding", b"", b"\x1b[31m\xff", b"[1, 2]", *cassette_lines("text_reply")]
    )
    raw = [e for e in events if isinstance(e, RawLine)]
    assert [r.text for r in raw][:1] == ["WARNING: proceeding"]
    assert len(raw) == 3
    assert result.unparsed_lines == 3
    assert result.final_text == "All done."


def test_without_a_known_model_the_tokens_are_kept_but_not_split_by_model():
    _, result = replay("text_reply", model=None)
    assert result.tokens == TokenUsage(input=1000, output=100)
    assert result.model_tokens == ()


def test_a_timeout_is_an_error_even_after_a_completed_turn():
    _, result = replay_lines(cassette_lines("text_reply"), exited(0, timed_out=True))
    assert result.is_error
    assert classify_error(result) is ErrorClass.TIMEOUT


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
EVENT_TYPES = [
    "thread.started",
    "turn.started",
    "turn.completed",
    "turn.failed",
    "item.started",
    "item.updated",
    "item.completed",
    "error",
]
ITEM_TYPES = ["agent_message", "command_execution", "file_change", "mcp_tool_call", "web_search"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=10), st.text(max_size=300))
def test_no_bytes_make_the_parser_raise(lines, stderr):
    parser = CodexStreamParser(model="gpt-5.5")
    for chunk in lines:
        parser.feed(chunk)
    parser.finish(exited(1, stderr))


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(EVENT_TYPES),
    st.sampled_from(ITEM_TYPES),
    st.dictionaries(
        st.sampled_from(
            [
                "id",
                "text",
                "command",
                "changes",
                "status",
                "exit_code",
                "usage",
                "error",
                "message",
                "server",
                "tool",
                "query",
                "thread_id",
            ]
        ),
        json_values,
        max_size=6,
    ),
)
def test_a_line_with_any_field_of_any_shape_does_not_make_the_parser_raise(kind, item_type, fields):
    parser = CodexStreamParser()
    parser.feed(line({"type": kind, **fields}))
    parser.feed(line({"type": kind, **fields, "item": {"type": item_type, **fields}}))
    parser.finish(exited(0))
