"""ClaudeStreamParser over recorded streams (tests/agents/cassettes/claude/*.jsonl)."""

from __future__ import annotations

from ralphctl.agents.events import (
    ApiRetry,
    Finished,
    MessageUsage,
    PermissionDenied,
    RateLimitSignal,
    SessionStarted,
    TextChunk,
    ToolCall,
    ToolOutput,
)
from ralphctl.domain.model import PermissionDenial, RateLimitInfo, TokenUsage
from tests.agents.streams import REAL_CLI_CASSETTES, cassette_lines, exited, replay, replay_lines
from tests.realcli.harness import OLDEST_VERSION

SESSION = "11111111-2222-4333-8444-555555555555"


def test_a_tool_using_turn_becomes_events_in_stream_order() -> None:
    events, _ = replay("tool_use_turn")

    assert [e for e in events if not isinstance(e, MessageUsage)] == [
        SessionStarted(SESSION, "claude-opus-5-5", "2.1.330"),
        RateLimitSignal("allowed", 1788436200.0, "five_hour"),
        TextChunk("I will create the file."),
        ToolCall("Write", "toolu_01", "/w/hello.py", edits_files=True),
        ToolCall("Bash", "toolu_02", "python hello.py && echo ok"),
        ToolOutput("toolu_01", is_error=False),
        ToolOutput("toolu_02", is_error=True),
        TextChunk("Done: hello.py prints hello."),
        Finished(is_error=False, cost_usd=0.084256),
    ]


def test_every_assistant_line_reports_its_messages_usage_and_the_output_it_shows() -> None:
    events, _ = replay("tool_use_turn")
    usage = [e for e in events if isinstance(e, MessageUsage)]

    assert {e.message_id for e in usage} == {"msg_01", "msg_02"}
    assert all(e.model == "claude-opus-5-5" for e in usage)
    assert usage[0].shown_chars == len("I will create the file.")


def test_tokens_and_cost_come_from_the_result_line_not_from_each_block() -> None:
    # msg_01 has three lines (one per block) each repeating input_tokens=1200: summing the
    # assistant lines would count 5100 input tokens. The result line is the only truth.
    _, result = replay("tool_use_turn")

    assert result.cost_usd == 0.084256
    assert result.tokens == TokenUsage(
        input=2700 + 600, output=123 + 40, cache_read=26000, cache_write=6300
    )


def test_tokens_add_up_every_model_in_model_usage_because_usage_misses_subagents() -> None:
    # result.usage says 2000 in / 150 out: the main loop only. modelUsage adds the subagent.
    _, result = replay("subagent")

    assert result.tokens == TokenUsage(input=5000, output=550, cache_read=1500, cache_write=50)


def test_without_model_usage_the_usage_totals_are_used() -> None:
    _, result = replay("old_cli_usage_only")

    assert result.tokens == TokenUsage(input=300, output=12, cache_read=40, cache_write=20)


def test_a_successful_run_gives_the_result_text_and_the_run_facts() -> None:
    _, result = replay("tool_use_turn", exited(0))

    assert result.final_text == "Done: hello.py prints hello."
    assert not result.is_error
    assert result.error_message is None
    assert result.session_id == SESSION
    assert result.num_turns == 2
    assert result.agent_version == "2.1.330"
    assert result.exit_code == 0
    assert result.duration_ms == 1234
    assert result.unparsed_lines == 0
    assert result.rate_limit == RateLimitInfo("allowed", 1788436200.0, "five_hour")


def test_an_api_error_is_an_error_although_its_subtype_says_success() -> None:
    events, result = replay("api_error_529", exited(1))

    assert ApiRetry(attempt=1, max_retries=2, error_status=529, error="overloaded") in events
    assert ApiRetry(attempt=2, max_retries=2, error_status=529, error="overloaded") in events
    assert events[-1] == Finished(is_error=True, cost_usd=0.0)
    assert result.is_error
    assert result.api_error_status == 529
    assert result.error_message is not None
    assert "API error status 529" in result.error_message
    assert "Overloaded" in result.error_message
    assert result.final_text.startswith("API Error: 529")


def test_a_killed_agent_without_result_line_is_an_error_that_says_so() -> None:
    _, result = replay("killed_no_result", exited(-15, stderr="Terminated\n"))

    assert result.is_error
    assert result.error_message == (
        "no result line: the agent process ended without a result (exit code -15);"
        " stderr tail: Terminated"
    )
    assert result.final_text == "Let me look at the tests."  # the last main-thread text
    assert result.session_id == SESSION  # from system/init
    assert result.cost_usd is None
    assert result.tokens == TokenUsage()
    assert result.unparsed_lines == 1  # the line cut off by the kill


def test_permission_denials_come_from_the_result_line() -> None:
    events, result = replay("permission_denials")

    denied = (
        "Claude requested permissions to write to /w/notes.txt, but you haven't granted it yet."
    )
    assert PermissionDenied("Write", denied, "toolu_01") in events
    assert result.permission_denials == (PermissionDenial("Write", "toolu_01", "/w/notes.txt"),)
    assert not result.is_error  # denials are reported, the run itself succeeded


def test_without_a_result_line_denials_come_from_the_permission_denied_lines() -> None:
    lines = cassette_lines("permission_denials")[:-1]

    _, result = replay_lines(lines, exited(-9))

    denied = (
        "Claude requested permissions to write to /w/notes.txt, but you haven't granted it yet."
    )
    assert result.permission_denials == (PermissionDenial("Write", "toolu_01", denied),)


def test_the_last_rate_limit_event_wins_and_rejected_is_kept_apart_from_warning() -> None:
    events, result = replay("rate_limited", exited(1))

    assert [e.status for e in events if isinstance(e, RateLimitSignal)] == [
        "allowed_warning",
        "rejected",
    ]
    assert result.rate_limit == RateLimitInfo("rejected", 1788436200.0, "five_hour")
    assert result.is_error
    assert result.api_error_status == 429


def test_a_usage_warning_alone_is_not_a_rejection() -> None:
    _, result = replay("warning_only")

    assert result.rate_limit == RateLimitInfo("allowed_warning", 1788436200.0, "seven_day")
    assert not result.is_error


def test_garbage_and_unknown_lines_are_tolerated_and_only_non_objects_are_counted() -> None:
    # Counted: a blank line, a plugin's stdout noise, a whitespace line, a cut-off object,
    # non-UTF-8 bytes, a JSON array and a JSON string. Unknown types and subtypes, and known
    # types with fields of the wrong shape, are valid JSON objects: ignored, not counted.
    events, result = replay("noise")

    assert result.unparsed_lines == 7
    assert SessionStarted(SESSION, "claude-opus-5-5", "2.1.330") in events
    assert TextChunk("Still here.") in events
    assert result.final_text == "Still here."
    assert not result.is_error
    assert result.cost_usd == 0.5
    assert result.session_id == SESSION  # the result's session_id is not a string
    assert result.num_turns is None  # true is not a number of turns
    assert result.tokens == TokenUsage()
    assert result.permission_denials == (PermissionDenial("unknown"),)


def test_partial_messages_show_text_as_it_streams_and_not_twice() -> None:
    events, result = replay("partial_messages")

    assert [e.text for e in events if isinstance(e, TextChunk)] == [
        "All ",
        "done.",
        # msg_01's assistant line repeats "All done.": not shown again. A message that was
        # not streamed (a synthetic one) is still shown.
        "API Error: Connection reset, retried.",
    ]
    assert result.final_text == "All done."


def test_subagent_text_is_neither_shown_nor_the_final_text() -> None:
    events, result = replay("subagent")

    texts = [e.text for e in events if isinstance(e, TextChunk)]
    assert texts == ["The survey is done; next I will fix the failing test."]
    assert ToolCall("Task", "toolu_task", "Survey the tests") in events
    assert ToolCall("Read", "toolu_sub_read", "/w/tests/test_app.py") in events
    assert "<promise>" not in result.final_text


def test_without_a_result_text_the_final_text_is_the_last_main_message() -> None:
    # error_max_turns carries errors[] and no "result"; msg_02 has two text blocks.
    _, result = replay("max_turns", exited(1))

    assert result.final_text == "Still working.\nHalfway there.\nNeed more turns."
    assert result.is_error
    assert result.error_message == (
        "the agent reported an error: error_max_turns, Reached maximum number of turns (2)"
    )
    assert result.agent_version == "2.1.197"


def test_a_non_zero_exit_after_a_good_result_is_still_an_error() -> None:
    _, result = replay("warning_only", exited(2, stderr="hook crashed\n"))

    assert result.is_error
    assert result.final_text == "Done."
    assert result.error_message == "the agent exited with code 2; stderr tail: hook crashed"


def test_a_timeout_or_an_interrupt_makes_the_iteration_an_error() -> None:
    _, timed_out = replay("killed_no_result", exited(-15, timed_out=True))
    _, interrupted = replay("warning_only", exited(0, interrupted=True))

    assert timed_out.is_error
    assert timed_out.timed_out
    assert timed_out.error_message is not None
    assert timed_out.error_message.startswith("timed out")
    assert interrupted.is_error
    assert interrupted.interrupted
    assert interrupted.error_message == "interrupted: the agent was stopped on request"


def test_an_old_clis_api_error_status_is_read_from_its_error_text() -> None:
    # The oldest supported CLI has no api_error_status: "API Error: 429 {json}" is all it says.
    folder = REAL_CLI_CASSETTES / f"claude-{OLDEST_VERSION}"
    statuses = {}
    for name in ("rate_limited_429", "overloaded_529"):
        lines = (folder / f"{name}.jsonl").read_bytes().splitlines()
        _, result = replay_lines(lines, exited(1))
        assert result.is_error
        assert result.assistant_error == "unknown"
        statuses[name] = result.api_error_status
    assert statuses == {"rate_limited_429": 429, "overloaded_529": 529}


def test_an_error_status_in_a_successful_runs_text_is_not_an_api_error() -> None:
    line = b'{"type":"result","is_error":false,"result":"API Error: 429 was handled."}'
    _, result = replay_lines([line])
    assert result.api_error_status is None
