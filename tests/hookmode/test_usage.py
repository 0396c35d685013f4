"""Live estimates from the stream: messages counted once, output estimated from what shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.claude_stream import ClaudeStreamParser
from ralphctl.agents.codex_stream import CodexStreamParser
from ralphctl.domain.costs import DEFAULT_PRICES, price_for
from ralphctl.domain.model import ModelTokens, TokenUsage
from ralphctl.engine.hookmode.usage import MeteredParser, Usage

CASSETTES = Path(__file__).parents[1] / "realcli" / "cassettes"


def assistant(message_id: str, *blocks: dict[str, Any], model: str = "claude-opus-5-5") -> bytes:
    usage = {
        "input_tokens": 1000,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 3000,
        "output_tokens": 1,
    }
    message = {"id": message_id, "model": model, "content": list(blocks), "usage": usage}
    return json.dumps(
        {"type": "assistant", "message": message, "parent_tool_use_id": None}
    ).encode()


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def meter() -> MeteredParser:
    return MeteredParser(ClaudeStreamParser(), DEFAULT_PRICES)


def test_a_message_split_over_several_lines_counts_its_input_once():
    metered = meter()
    metered.feed(assistant("msg_1", text("Let me look.")))
    metered.feed(assistant("msg_1", {"type": "tool_use", "name": "Read", "input": {"p": "x"}}))
    usage = metered.current()
    assert (usage.tokens.input, usage.tokens.cache_write, usage.tokens.cache_read) == (
        1000,
        200,
        3000,
    )
    assert metered.messages == 1


def test_output_is_estimated_at_four_characters_a_token_never_below_the_placeholder():
    metered = meter()
    metered.feed(assistant("msg_1", text("x" * 400)))
    metered.feed(assistant("msg_2", text("")))
    assert metered.take().tokens.output == 100 + 1


def test_the_estimate_is_priced_with_the_price_table():
    metered = meter()
    metered.feed(assistant("msg_1", text("x" * 400)))
    # claude-opus-5-5: $4 input, $20 output, $0.20 cache read, $5 cache write per million
    expected = (1000 * 4 + 100 * 20 + 3000 * 0.2 + 200 * 5) / 1_000_000
    assert metered.current().cost_usd == pytest.approx(expected)


def test_taking_an_iterations_usage_starts_the_next_from_zero():
    metered = meter()
    metered.feed(assistant("msg_1", text("one")))
    assert metered.take().tokens.input == 1000
    assert metered.take() == Usage()
    metered.feed(assistant("msg_2", text("two")))
    assert metered.current().tokens.input == 1000
    assert metered.messages == 2


def test_a_model_without_a_price_adds_tokens_and_is_named():
    metered = meter()
    metered.feed(assistant("msg_1", text("hi"), model="mystery-model-1"))
    usage = metered.current()
    assert (usage.tokens.input, usage.cost_usd) == (1000, 0.0)
    assert metered.unpriced == {"mystery-model-1"}


def test_the_events_of_the_wrapped_parser_pass_through():
    metered = meter()
    events = metered.feed(assistant("msg_1", text("Hello there.")))
    assert [type(e).__name__ for e in events] == ["TextChunk", "MessageUsage"]


@pytest.mark.parametrize("line", [b"", b"garbage", b"[1]", b'{"type": "assistant"}'])
def test_lines_that_are_not_assistant_messages_are_ignored(line):
    metered = meter()
    metered.feed(line)
    assert metered.current() == Usage()


def test_a_real_runs_result_line_gives_the_processs_own_totals():
    metered = meter()
    for line in (CASSETTES / "write_accept_edits.jsonl").read_bytes().splitlines():
        metered.feed(line)
    assert metered.reported == Usage(TokenUsage(input=2700, output=100), 0.012799999999999999)
    assert metered.messages == 2


# --- an agent whose stream shows no usage while it runs (Codex) -----------------------------


class Record:
    """The agent's own record of the run's responses, growing as the run goes on."""

    def __init__(self) -> None:
        self.responses: list[ModelTokens] = []

    def read(self) -> tuple[ModelTokens, ...]:
        return tuple(self.responses)


def test_a_stream_without_usage_is_metered_from_the_agents_record_one_iteration_at_a_time():
    record = Record()
    metered = MeteredParser(CodexStreamParser(), DEFAULT_PRICES, record.read)
    record.responses.append(ModelTokens("gpt-5.5", TokenUsage(1000, 10)))
    first = metered.take()
    record.responses += [
        ModelTokens("gpt-5.5", TokenUsage(1100, 20)),
        ModelTokens("gpt-5.5", TokenUsage(1200, 30, 400)),
    ]

    assert first.tokens == TokenUsage(1000, 10)
    assert metered.current().tokens == TokenUsage(2300, 50, 400)
    price = price_for("gpt-5.5", DEFAULT_PRICES)
    assert price is not None
    assert metered.take().cost_usd == pytest.approx(price.cost(TokenUsage(2300, 50, 400)))
    assert metered.current() == Usage()


def test_the_record_is_not_read_while_the_stream_meters_the_run():
    def unread() -> tuple[ModelTokens, ...]:
        raise AssertionError("the record was read")

    metered = MeteredParser(ClaudeStreamParser(), DEFAULT_PRICES, unread)
    metered.feed(assistant("msg_1", text("Hello.")))

    assert metered.take().tokens.input == 1000
