"""The command agent's output parser: the final text, usage by the user's patterns, the end."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.command_output import FINAL_TEXT_CHARS, CommandOutputParser, plain_text
from ralphctl.agents.events import TextChunk
from ralphctl.domain.analyzer import ErrorClass, classify_error
from ralphctl.domain.markers import detect, parse_marker
from ralphctl.domain.model import IterationResult, ModelTokens, TokenUsage
from ralphctl.domain.usage_patterns import cost_pattern, tokens_pattern
from tests.agents.streams import exited

TOKENS = tokens_pattern(r"tokens: (?P<input>[\d,.]+k?) in, (?P<output>[\d,.]+k?) out")
COST = cost_pattern(r"cost: \$(?P<cost>[0-9.]+)")


def parse(
    *lines: str | bytes,
    outcome: ProcessOutcome | None = None,
    tokens: re.Pattern[str] | None = TOKENS,
    cost: re.Pattern[str] | None = COST,
    model: str | None = None,
) -> IterationResult:
    parser = CommandOutputParser(tokens=tokens, cost=cost, model=model)
    for line in lines:
        parser.feed(line if isinstance(line, bytes) else line.encode())
    return parser.finish(outcome or exited(0))


def test_the_final_text_is_the_whole_output_text() -> None:
    result = parse("Looking at app.py", "Fixed it.", "", "<promise>COMPLETE</promise>")

    assert result.final_text == "Looking at app.py\nFixed it.\n\n<promise>COMPLETE</promise>"
    assert not result.is_error


def test_each_text_line_is_shown_as_it_comes() -> None:
    parser = CommandOutputParser()

    assert parser.feed(b"Working on it") == [TextChunk("Working on it")]
    assert parser.feed(b"   ") == []


def test_usage_lines_are_counted_and_left_out_of_the_final_text() -> None:
    result = parse(
        "Step one.",
        "tokens: 1,200 in, 300 out",
        "Step two.",
        "tokens: 2.5k in, 100 out",
        "RALPH_DONE",
        "cost: $0.0123",
    )

    assert result.tokens == TokenUsage(input=3700, output=400)
    assert result.cost_usd == 0.0123
    assert result.final_text == "Step one.\nStep two.\nRALPH_DONE"
    assert detect(result.final_text, parse_marker("RALPH_DONE")).completed


def test_without_patterns_nothing_is_counted_and_the_cost_is_unknown() -> None:
    result = parse("tokens: 10 in, 5 out", tokens=None, cost=None)

    assert result.tokens == TokenUsage()
    assert result.cost_usd is None
    assert result.final_text == "tokens: 10 in, 5 out"


def test_tokens_are_priced_by_the_loops_model() -> None:
    result = parse("tokens: 10 in, 5 out", model="gpt-5-codex")

    assert result.model == "gpt-5-codex"
    assert result.model_tokens == (ModelTokens("gpt-5-codex", TokenUsage(10, 5)),)


def test_a_model_group_breaks_the_tokens_down_by_model() -> None:
    by_model = tokens_pattern(r"\[(?P<model>\S+)\] (?P<input>\d+) in, (?P<output>\d+) out")

    result = parse("[gpt-5] 10 in, 1 out", "[gpt-5-mini] 20 in, 2 out", "no model", tokens=by_model)

    assert result.model_tokens == (
        ModelTokens("gpt-5", TokenUsage(10, 1)),
        ModelTokens("gpt-5-mini", TokenUsage(20, 2)),
    )
    assert result.tokens == TokenUsage(30, 3)


def test_escape_sequences_and_redrawn_progress_are_cleaned() -> None:
    coloured = b"\x1b[1;32mDone\x1b[0m \x1b]8;;https://x\x07link\x1b]8;;\x07"

    assert plain_text(coloured) == "Done link"
    assert plain_text(b"10%\r50%\r100% done\r") == "100% done"
    assert plain_text(b"caf\xc3\xa9 \xff") == "café \ufffd"


def test_the_final_text_keeps_only_the_end_of_a_long_output() -> None:
    lines = [f"line {n:06d} " + "x" * 100 for n in range(2000)]

    result = parse(*lines, "RALPH_DONE")

    assert len(result.final_text) <= FINAL_TEXT_CHARS
    assert result.final_text.endswith("\nRALPH_DONE")
    assert "line 000000" not in result.final_text


def test_a_prompt_echoed_before_the_answer_does_not_complete_the_loop() -> None:
    prompt = "Fix it.\nWhen done, end your reply with <promise>COMPLETE</promise>."
    echo = prompt.splitlines()

    result = parse(*echo, "I could not finish: the tests still fail.")

    marker = parse_marker("<promise>COMPLETE</promise>")
    assert not detect(result.final_text, marker, prompt=prompt).completed


def test_a_prompt_echoed_alone_does_not_complete_the_loop_with_a_plain_marker() -> None:
    prompt = "Fix it.\nEnd your reply with the line `RALPH_DONE` once done.\nNever write it else."

    result = parse(*prompt.splitlines())

    assert not detect(result.final_text, parse_marker("RALPH_DONE"), prompt=prompt).completed


def test_a_failed_exit_is_an_error_quoting_the_end_of_stderr() -> None:
    result = parse("partial", outcome=exited(2, "Traceback …\nValueError: bad config\n"))

    assert result.is_error
    assert result.exit_code == 2
    assert result.error_message == (
        "the agent exited with code 2; stderr: Traceback …\nValueError: bad config"
    )
    assert classify_error(result) is ErrorClass.AGENT_EXIT


def test_a_kill_a_timeout_and_an_interrupt_are_errors() -> None:
    killed = parse(outcome=exited(-9))
    timed_out = parse(outcome=exited(-9, timed_out=True))
    stopped = parse(outcome=exited(0, interrupted=True))

    assert killed.error_message == "the agent was killed by signal 9"
    assert timed_out.error_message == "timed out: the agent was stopped at the iteration timeout"
    assert stopped.error_message == "interrupted: the agent was stopped on request"
    assert killed.is_error and timed_out.is_error and stopped.is_error  # noqa: PT018


def test_an_http_status_on_the_last_lines_of_a_failed_run_is_its_api_error() -> None:
    limited = parse(outcome=exited(1, "retrying…\nerror: HTTP 429 Too Many Requests\n"))
    denied = parse(outcome=exited(1, "request failed with status code 401\n"))
    overloaded = parse("API Error: 529 Overloaded. Try again later.", outcome=exited(1))

    assert limited.api_error_status == 429
    assert classify_error(limited) is ErrorClass.RATE_LIMITED
    assert denied.api_error_status == 401
    assert classify_error(denied) is ErrorClass.AUTH
    assert overloaded.api_error_status == 529


def test_a_successful_run_that_mentions_a_status_has_no_api_error() -> None:
    assert parse("Fixed the HTTP 429 handling.").api_error_status is None


@given(st.lists(st.binary(max_size=300), max_size=30), st.integers(-64, 255), st.text())
def test_arbitrary_bytes_never_crash_the_parser(lines: list[bytes], code: int, stderr: str) -> None:
    parser = CommandOutputParser(tokens=TOKENS, cost=COST, model="m")
    for line in lines:
        parser.feed(line)

    result = parser.finish(exited(code, stderr))

    assert result.is_error == (code != 0)
    assert len(result.final_text) <= FINAL_TEXT_CHARS


@given(st.lists(st.text(max_size=80), max_size=30))
def test_arbitrary_text_lines_reach_the_final_text_unless_they_report_usage(
    lines: list[str],
) -> None:
    clean = [line for line in lines if "\r" not in line and "\x1b" not in line and "\n" not in line]
    result = parse(*clean, tokens=None, cost=None)

    assert result.final_text == "\n".join(clean)
