"""AiderStreamParser on output recorded from the real Aider (0.86.2) and on crafted lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ralphctl.agents.aider_stream import AiderStreamParser
from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.events import (
    AgentEvent,
    ApiRetry,
    PermissionDenied,
    TextChunk,
    ToolCall,
    ToolOutput,
)
from ralphctl.domain.analyzer import ErrorClass, classify_error, edited_files
from ralphctl.domain.model import IterationResult, ModelTokens, TokenUsage
from ralphctl.domain.usage_limits import detect_usage_limit

CASSETTES = Path(__file__).parents[1] / "cassettes" / "aider"
HEADER = [
    b"",
    b"Aider v0.86.2",
    b"Model: openai/gpt-mock with whole edit format",
    b"Git repo: none",
    b"Repo-map: disabled",
    b"",
]


def exited(code: int | None, stderr: str = "", **flags: bool) -> ProcessOutcome:
    return ProcessOutcome(exit_code=code, duration_ms=1234, stderr_tail=stderr, **flags)


def replay_lines(
    lines: list[bytes], outcome: ProcessOutcome | None = None, usage_log: Path | None = None
) -> tuple[list[AgentEvent], IterationResult]:
    parser = AiderStreamParser(usage_log=usage_log)
    events = [event for line in lines for event in parser.feed(line)]
    return events, parser.finish(outcome or exited(0))


def cassette(name: str) -> list[bytes]:
    lines = (CASSETTES / f"{name}.txt").read_bytes().split(b"\n")
    return lines[:-1] if lines[-1] == b"" else lines


def replay(
    name: str, tmp_path: Path | None = None, outcome: ProcessOutcome | None = None
) -> tuple[list[AgentEvent], IterationResult]:
    """A cassette's stdout; with ``tmp_path``, with a copy of its analytics log."""
    log = None
    if tmp_path is not None:
        log = tmp_path / f"{name}.analytics.jsonl"
        shutil.copyfile(CASSETTES / f"{name}.analytics.jsonl", log)
    recorded = json.loads((CASSETTES / f"{name}.json").read_text())
    return replay_lines(cassette(name), outcome or exited(recorded["exit_code"]), log)


# --- recorded output -------------------------------------------------------------------------


def test_a_plain_reply_is_the_final_text_without_aiders_own_lines(tmp_path):
    events, result = replay("text_reply", tmp_path)

    assert result.final_text == "All done.\n\nDONE"
    assert not result.is_error
    assert result.tokens == TokenUsage(input=1000, output=100)
    assert result.cost_usd is None  # no price for the mock model: the engine's to estimate
    assert (result.model, result.agent_version) == ("openai/gpt-mock", "0.86.2")
    assert result.model_tokens == (ModelTokens("openai/gpt-mock", TokenUsage(1000, 100)),)
    assert result.num_turns == 1
    shown = "".join(e.text for e in events if isinstance(e, TextChunk))
    assert "Aider v0.86.2" not in shown
    assert "Tokens:" not in shown


def test_the_prompt_is_never_text(tmp_path):
    _, result = replay("create_file", tmp_path)

    assert "when it is done" not in result.final_text  # the prompt's words
    assert result.final_text.endswith("<promise>COMPLETE</promise>")  # the reply's own


def test_an_applied_edit_is_an_editing_tool_call_after_the_final_text(tmp_path):
    events, result = replay("create_file", tmp_path)

    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert (call.name, call.summary, call.edits_files) == ("edit", "notes.txt", True)
    assert ToolOutput(call.tool_use_id) in events
    assert "Applied edit" not in result.final_text
    assert result.final_text.startswith("I will create the notes.")
    assert edited_files(result)
    assert result.tokens == TokenUsage(input=1200, output=80)


def test_a_dry_run_edit_is_a_permission_denial_and_no_progress(tmp_path):
    events, result = replay("dry_run", tmp_path)

    (denied,) = [e for e in events if isinstance(e, PermissionDenied)]
    assert denied.tool_name == "edit"
    assert "--dry-run" in denied.message
    (denial,) = result.permission_denials
    assert denial.tool_use_id == denied.tool_use_id
    assert not edited_files(result)
    assert not result.is_error


def test_a_priced_model_reports_its_cost_in_usd(tmp_path):
    _, result = replay("priced_reply", tmp_path)

    assert result.cost_usd == 0.008
    assert result.model == "openai/gpt-4.1"
    assert result.tokens == TokenUsage(input=2000, output=500)


def test_without_the_log_tokens_and_cost_come_from_the_rounded_tokens_line():
    _, result = replay("priced_reply")

    assert result.tokens == TokenUsage(input=2000, output=500)
    assert result.cost_usd == 0.008


def test_the_log_gives_exact_counts_where_the_text_rounds(tmp_path):
    lines = [*HEADER, b"Answer.", b"", b"Tokens: 1.2k sent, 80 received."]
    log = tmp_path / "log.jsonl"
    event = {"prompt_tokens": 1234, "completion_tokens": 80, "cost": 0}
    log.write_text(json.dumps({"event": "message_send", "properties": event}) + "\n")

    _, result = replay_lines(lines, usage_log=log)

    assert result.tokens == TokenUsage(input=1234, output=80)
    assert not log.exists()  # read once, then deleted


def test_a_bad_request_is_an_api_error_although_aider_exits_0(tmp_path):
    _, result = replay("bad_request_400", tmp_path)

    assert result.exit_code == 0
    assert result.is_error
    assert result.api_error_status == 400
    assert result.final_text.startswith("litellm.BadRequestError")
    assert classify_error(result) is ErrorClass.API_ERROR


def test_an_auth_failure_keeps_its_wrapped_message_and_is_the_auth_class(tmp_path):
    _, result = replay("auth_401", tmp_path)

    assert result.api_error_status == 401
    assert result.assistant_error == "authentication_failed"
    assert "API key provided" in result.final_text
    assert "not able to authenticate you" in result.final_text
    assert classify_error(result) is ErrorClass.AUTH


def test_a_429_aider_gave_up_on_parks_the_loop(tmp_path):
    events, result = replay("rate_limited_429", tmp_path)

    retries = [e for e in events if isinstance(e, ApiRetry)]
    assert [r.attempt for r in retries] == list(range(1, 9))
    assert {(r.error_status, r.error) for r in retries} == {(429, "RateLimitError")}
    assert result.is_error
    assert (result.api_error_status, result.assistant_error) == (429, "rate_limit")
    assert classify_error(result) is ErrorClass.RATE_LIMITED
    assert detect_usage_limit(result, now=1_000.0) is not None


def test_a_429_still_being_retried_at_the_timeout_parks_the_loop_too():
    lines = [
        *HEADER,
        b"litellm.RateLimitError: RateLimitError: mock 429",
        b"Retrying in 0.5 seconds...",
    ]

    _, result = replay_lines(lines, exited(-2, timed_out=True))

    assert result.timed_out
    assert result.api_error_status == 429
    assert detect_usage_limit(result, now=1_000.0) is not None


# --- crafted lines ---------------------------------------------------------------------------


def test_a_reply_after_a_retried_failure_is_a_success():
    lines = [
        *HEADER,
        b"litellm.InternalServerError: InternalServerError: boom",
        b"The API provider's servers are down or overloaded.",
        b"Retrying in 0.2 seconds...",
        b"Recovered answer.",
        b"",
        b"Tokens: 50 sent, 5 received.",
    ]

    _, result = replay_lines(lines)

    assert not result.is_error
    assert result.api_error_status is None
    assert result.final_text == "Recovered answer."


def test_the_last_closed_reply_is_the_final_text():
    lines = [
        *HEADER,
        b"First try.",
        b"Tokens: 10 sent, 1 received.",
        b"Applied edit to a.py",
        b"Fixed it.",
        b"",
        b"Tokens: 20 sent, 2 received.",
        b"Applied edit to a.py",
    ]

    _, result = replay_lines(lines)

    assert result.final_text == "Fixed it."
    assert result.tokens == TokenUsage(input=30, output=3)
    assert result.num_turns == 2


def test_cache_counts_and_a_cost_on_its_own_line_are_read():
    lines = [
        *HEADER,
        b"Done.",
        b"Tokens: 12k sent, 1.5k cache write, 800 cache hit, 2.1k received.",
        b"Cost: $0.12 message, $0.30 session.",
    ]

    _, result = replay_lines(lines)

    assert result.tokens == TokenUsage(input=12000, output=2100, cache_read=800, cache_write=1500)
    assert result.cost_usd == 0.12


def test_a_killed_aider_is_truncated_and_an_error():
    _, result = replay_lines([*HEADER, b"Half an ans"], exited(-9))

    assert result.truncated
    assert result.is_error
    assert classify_error(result) is ErrorClass.CRASH
    assert result.final_text == ""  # a reply Aider never closed is no answer


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=20))
def test_arbitrary_bytes_never_crash_the_parser(chunks):
    _, result = replay_lines(chunks, exited(0))
    assert isinstance(result, IterationResult)


_LINES = st.sampled_from(
    [
        "Tokens: 1.2k sent, 3 received.",
        "Tokens: 9.9k sent, 1k cache write, 2k cache hit, 1 received."
        " Cost: $1.00 message, $2 session.",
        "Cost: $0.5 message, $1 session.",
        "Applied edit to x",
        "Did not apply edit to y (--dry-run)",
        "litellm.RateLimitError: x",
        "litellm.WeirdError: y",
        "Retrying in 1.0 seconds...",
        "Model: m with whole edit format",
        "Aider v1.2.3",
        "",
        "text",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINES | st.text(max_size=40), max_size=30))
def test_any_mix_of_aiders_lines_never_crashes_the_parser(lines):
    _, result = replay_lines([line.encode() for line in lines], exited(0))
    assert isinstance(result, IterationResult)
