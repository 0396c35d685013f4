"""CopilotStreamParser on streams recorded from the real CLI (1.0.102) and on crafted lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.copilot_stream import CopilotStreamParser, read_usage
from ralphctl.agents.events import (
    AgentEvent,
    ApiRetry,
    Finished,
    PermissionDenied,
    RawLine,
    TextChunk,
    ToolCall,
    ToolOutput,
)
from ralphctl.domain.analyzer import ErrorClass, classify_error, edited_files
from ralphctl.domain.model import IterationResult, ModelTokens, TokenUsage
from ralphctl.domain.usage_limits import LimitSource, detect_usage_limit
from tests.agents.copilot.lines import RESULT_OK, exited, line, lines_of

CASSETTES = Path(__file__).parents[1] / "cassettes" / "copilot"


def replay_lines(
    lines: list[bytes], outcome: ProcessOutcome | None = None, usage_file: Path | None = None
) -> tuple[list[AgentEvent], IterationResult]:
    parser = CopilotStreamParser(usage_file=usage_file)
    events = [event for line in lines for event in parser.feed(line)]
    return events, parser.finish(outcome or exited(0))


def replay(
    name: str, tmp_path: Path, outcome: ProcessOutcome | None = None
) -> tuple[list[AgentEvent], IterationResult]:
    """A cassette's stdout, with a copy of its usage file where the adapter would put it."""
    usage = tmp_path / f"{name}.usage.json"
    shutil.copyfile(CASSETTES / f"{name}.usage.json", usage)
    recorded = json.loads((CASSETTES / f"{name}.json").read_text())
    lines = lines_of((CASSETTES / f"{name}.jsonl").read_bytes())
    return replay_lines(lines, outcome or exited(recorded["exit_code"]), usage)


# --- recorded streams ------------------------------------------------------------------------


def test_a_text_reply_is_the_final_text_with_its_tokens_and_no_cost(tmp_path):
    events, result = replay("text_reply", tmp_path)

    assert result.final_text == "All done."
    assert not result.is_error
    assert result.session_id == "5e55a1d0-0000-4000-8000-00000000c0b1"
    assert result.tokens == TokenUsage(input=1000, output=100)
    assert result.model_tokens == (ModelTokens("gpt-4.1", TokenUsage(1000, 100)),)
    assert result.model == "gpt-4.1"
    assert result.cost_usd is None  # the engine prices the tokens
    assert not result.truncated
    assert [e for e in events if isinstance(e, TextChunk)] == [TextChunk("All done.", delta=True)]
    assert isinstance(events[-1], Finished)


def test_the_prompt_echo_is_never_text(tmp_path):
    events, result = replay("text_reply", tmp_path)

    assert "TASK.md" not in result.final_text
    assert all("TASK.md" not in e.text for e in events if isinstance(e, TextChunk))


def test_a_created_file_is_an_editing_tool_call_and_the_last_message_is_the_final_text(tmp_path):
    events, result = replay("create_file", tmp_path)

    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert (call.name, call.edits_files) == ("create", True)
    assert call.summary.endswith("/project/notes.txt")
    assert ToolOutput(call.tool_use_id, is_error=False) in events
    assert result.final_text == "Wrote notes.txt.\nDONE"  # not "I will write the notes."
    assert "Created file" not in result.final_text  # the tool's output never counts
    assert edited_files(result)
    # 1200 + 1300 served uncached, 400 from the cache: the CLI counts them in inputTokens
    assert result.tokens == TokenUsage(input=2500, output=100, cache_read=400)


def test_a_shell_command_is_a_tool_call_that_edits_nothing(tmp_path):
    events, result = replay("shell_command", tmp_path)

    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert (call.name, call.summary, call.edits_files) == ("bash", "echo 42", False)
    assert result.final_text == "The command printed 42."
    assert not edited_files(result)


def test_the_read_only_rules_denial_is_a_permission_denial(tmp_path):
    events, result = replay("read_only_denied", tmp_path)

    (denied,) = [e for e in events if isinstance(e, PermissionDenied)]
    assert denied.tool_name == "create"
    assert "denied due to the following rules: `write`" in denied.message
    (denial,) = result.permission_denials
    assert (denial.tool_name, denial.tool_use_id) == ("create", denied.tool_use_id)
    assert not result.is_error
    assert not edited_files(result)  # a refused edit is no progress


def test_without_an_allow_flag_a_write_is_denied_for_want_of_a_user(tmp_path):
    _, result = replay("default_denied", tmp_path)

    (denial,) = result.permission_denials
    assert "no interactive user response" in denial.detail


def test_a_bad_request_is_an_api_error_with_status_400(tmp_path):
    _, result = replay("bad_request_400", tmp_path)

    assert result.is_error
    assert result.exit_code == 1
    assert result.api_error_status == 400
    assert result.error_message is not None
    assert "API error status 400" in result.error_message
    assert result.tokens == TokenUsage()
    assert classify_error(result) is ErrorClass.API_ERROR


def test_a_429_after_the_clis_retries_is_a_rate_limit_that_parks_the_loop(tmp_path):
    events, result = replay("rate_limited_429", tmp_path)

    retries = [e for e in events if isinstance(e, ApiRetry)]
    assert [(r.attempt, r.error_status, r.error) for r in retries] == [
        (n, 429, "rate_limit") for n in range(1, 6)
    ]
    assert result.is_error
    assert (result.api_error_status, result.assistant_error) == (429, "rate_limit")
    assert "retried 5 times" in result.final_text
    assert classify_error(result) is ErrorClass.RATE_LIMITED
    limit = detect_usage_limit(result, now=1_000.0)
    assert limit is not None
    assert limit.source is LimitSource.ASSISTANT_ERROR


def test_without_a_usage_file_a_stored_transcript_has_no_tokens(tmp_path):
    lines = lines_of((CASSETTES / "text_reply.jsonl").read_bytes())

    _, result = replay_lines(lines)

    assert result.final_text == "All done."
    assert result.tokens == TokenUsage()
    assert result.model == "gpt-4.1"  # still known from the stream: the tokens are not


def test_the_usage_file_is_deleted_once_read(tmp_path):
    usage = tmp_path / "u.json"
    shutil.copyfile(CASSETTES / "text_reply.usage.json", usage)

    assert read_usage(usage) == (ModelTokens("gpt-4.1", TokenUsage(1000, 100)),)
    assert not usage.exists()
    assert read_usage(usage) == ()


def test_a_broken_usage_file_gives_no_tokens(tmp_path):
    usage = tmp_path / "u.json"
    usage.write_text('{"modelMetrics": {"m": {"usage": {"inputTokens": "many"')

    assert read_usage(usage) == ()


# --- crafted lines ---------------------------------------------------------------------------


def test_a_stream_without_its_result_line_is_truncated_and_an_error():
    lines = [line("assistant.message", {"messageId": "m", "content": "half"})]

    _, result = replay_lines(lines, exited(None, "killed"))

    assert result.truncated
    assert result.is_error
    assert result.final_text == "half"
    assert result.error_message is not None
    assert "no result line" in result.error_message
    assert classify_error(result) is ErrorClass.CRASH


def test_garbage_lines_are_raw_lines_and_counted():
    events, result = replay_lines([b"Error: something broke", b"", b"[1, 2]", RESULT_OK])

    assert [e for e in events if isinstance(e, RawLine)] == [
        RawLine("Error: something broke"),
        RawLine("[1, 2]"),
    ]
    assert result.unparsed_lines == 3
    assert not result.is_error


def test_a_subagents_messages_are_not_the_final_text():
    lines = [
        line("assistant.message", {"messageId": "a", "content": "Main answer."}),
        line("assistant.message", {"messageId": "b", "content": "sub", "parentToolCallId": "t"}),
        line(
            "assistant.message_delta",
            {"messageId": "b", "deltaContent": "sub", "parentToolCallId": "t"},
        ),
        RESULT_OK,
    ]

    events, result = replay_lines(lines)

    assert result.final_text == "Main answer."
    assert [e.text for e in events if isinstance(e, TextChunk)] == ["Main answer."]


def test_an_auth_error_maps_to_the_auth_class():
    error = {"errorType": "authentication", "message": "Authentication failed", "statusCode": 401}
    lines = [line("session.error", error), line("result", sessionId="s", exitCode=1)]

    _, result = replay_lines(lines, exited(1))

    assert result.assistant_error == "authentication_failed"
    assert classify_error(result) is ErrorClass.AUTH


def test_a_session_error_the_run_got_over_is_not_the_runs_error():
    lines = [
        line("session.error", {"errorType": "mcp", "message": "server x failed"}),
        line("assistant.message", {"messageId": "m", "content": "Done anyway."}),
        RESULT_OK,
    ]

    _, result = replay_lines(lines)

    assert not result.is_error
    assert result.api_error_status is None
    assert result.final_text == "Done anyway."


def test_a_nonzero_exit_without_a_session_error_is_an_agent_exit():
    _, result = replay_lines([line("result", sessionId="s", exitCode=2)], exited(2, "boom"))

    assert result.is_error
    assert result.error_message == "the agent exited with code 2; stderr tail: boom"
    assert classify_error(result) is ErrorClass.AGENT_EXIT


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=20))
def test_arbitrary_bytes_never_crash_the_parser(chunks):
    _, result = replay_lines(chunks, exited(0))
    assert isinstance(result, IterationResult)


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
_TYPES = st.sampled_from(
    [
        "assistant.message",
        "assistant.message_delta",
        "tool.execution_start",
        "tool.execution_complete",
        "model.call_failure",
        "assistant.turn_retry",
        "session.error",
        "session.tools_updated",
        "result",
    ]
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_TYPES, _VALUES, _VALUES), max_size=12))
def test_ill_typed_known_lines_never_crash_the_parser(records):
    lines = [json.dumps({"type": t, "data": d, "exitCode": c}).encode() for t, d, c in records]
    _, result = replay_lines(lines, exited(0))
    assert isinstance(result, IterationResult)
