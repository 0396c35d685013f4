"""Iteration cost: reported beats estimated; unknown models give no cost; the token budget."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ralphctl.domain.costs import (
    ANTHROPIC_PRICES,
    DEFAULT_PRICES,
    GOOGLE_PRICES,
    OPENAI_PRICES,
    PRICES_AS_OF,
    XAI_PRICES,
    Cost,
    CostSource,
    Price,
    iteration_cost,
    price_for,
)
from ralphctl.domain.model import UNNAMED_MODEL, IterationResult, ModelTokens, TokenUsage, ToolUse
from tests.agents.streams import REAL_CLI_CASSETTES, cassette_lines, exited, replay_lines

MILLION = TokenUsage(input=1_000_000, output=1_000_000, cache_read=1_000_000, cache_write=1_000_000)


@pytest.mark.parametrize(
    ("model", "per_million"),
    [
        ("claude-opus-5-5", (4.0, 20.0, 0.2, 5.0)),
        ("claude-opus-5[1m]", (5.0, 25.0, 0.5, 6.25)),
        ("claude-opus-4-5-20251101", (5.0, 25.0, 0.5, 6.25)),
        ("claude-opus-4-1-20250805", (15.0, 75.0, 1.5, 18.75)),
        ("claude-opus-4-20250514", (15.0, 75.0, 1.5, 18.75)),
        ("claude-sonnet-5-5", (2.0, 10.0, 0.1, 2.5)),
        ("claude-sonnet-5", (2.0, 10.0, 0.2, 2.5)),
        ("claude-sonnet-4-5-20250929", (3.0, 15.0, 0.3, 3.75)),
        ("claude-3-5-sonnet-20241022", (3.0, 15.0, 0.3, 3.75)),
        ("claude-haiku-5-5", (0.1, 0.5, 0.01, 0.125)),
        ("claude-haiku-4-5-20251001", (1.0, 5.0, 0.1, 1.25)),
        ("claude-3-5-haiku-20241022", (0.8, 4.0, 0.08, 1.0)),
        ("claude-3-haiku-20240307", (0.25, 1.25, 0.03, 0.3)),
        ("claude-fable-5-1", (10.0, 50.0, 0.25, 12.5)),
        ("Claude-Opus-5-5", (4.0, 20.0, 0.2, 5.0)),
        ("us.anthropic.claude-opus-4-5-20251101-v1:0", (5.0, 25.0, 0.5, 6.25)),
        ("anthropic/claude-sonnet-4-5", (3.0, 15.0, 0.3, 3.75)),
        ("claude-opus-4.5", (5.0, 25.0, 0.5, 6.25)),  # Copilot's spelling
        ("claude-sonnet-4.5", (3.0, 15.0, 0.3, 3.75)),
        ("gpt-5", (1.25, 10.0, 0.125, 1.25)),
        ("gpt-5-codex", (1.25, 10.0, 0.125, 1.25)),
        ("gpt-5.1-codex-max", (1.25, 10.0, 0.125, 1.25)),
        ("openai/gpt-5-2025-08-07", (1.25, 10.0, 0.125, 1.25)),
        ("gpt-5.2", (1.75, 14.0, 0.175, 1.75)),
        ("gpt-5-mini", (0.25, 2.0, 0.025, 0.25)),
        ("gpt-5.1-codex-mini", (0.25, 2.0, 0.025, 0.25)),
        ("gpt-5-nano-2025-08-07", (0.05, 0.4, 0.005, 0.05)),
        ("gpt-5-pro", (15.0, 120.0, 15.0, 15.0)),
        ("gpt-4.1", (2.0, 8.0, 0.5, 2.0)),
        ("gpt-4.1-mini-2025-04-14", (0.4, 1.6, 0.1, 0.4)),
        ("gpt-4.1-nano", (0.1, 0.4, 0.025, 0.1)),
        ("o3", (2.0, 8.0, 0.5, 2.0)),
        ("o3-pro", (20.0, 80.0, 20.0, 20.0)),
        ("o4-mini-2025-04-16", (1.1, 4.4, 0.275, 1.1)),
        ("openrouter/openai/o4-mini", (1.1, 4.4, 0.275, 1.1)),
        ("gemini-2.5-pro", (1.25, 10.0, 0.125, 1.25)),
        ("models/gemini-2.5-flash", (0.3, 2.5, 0.03, 0.3)),
        ("google/gemini-2.5-flash-lite", (0.1, 0.4, 0.01, 0.1)),
        ("gemini-2.5-flash-preview-09-2025", (0.3, 2.5, 0.03, 0.3)),
        ("gemini-3-pro-preview", (2.0, 12.0, 0.2, 2.0)),
        ("gemini-3-flash-preview", (0.5, 3.0, 0.05, 0.5)),
        ("grok-code-fast-1", (0.2, 1.5, 0.02, 0.2)),
    ],
)
def test_the_longest_listed_prefix_prices_a_model(model, per_million):
    price = price_for(model)
    assert price is not None
    assert (price.input, price.output, price.cache_read, price.cache_write) == per_million


@pytest.mark.parametrize(
    "model", ["gpt-50", "gpt-4", "o33", "claude-opus-40", "opus", "", "claude-", "llama-3.3"]
)
def test_models_that_no_prefix_matches_have_no_price(model):
    assert price_for(model) is None


def test_the_shipped_table_is_dated_per_provider():
    assert PRICES_AS_OF == {
        "anthropic": "2026-11-21",
        "openai": "2025-12",
        "google": "2025-12",
        "xai": "2025-12",
    }
    assert all(isinstance(price, Price) for price in DEFAULT_PRICES.values())


def test_no_provider_prices_a_model_of_another():
    tables = [ANTHROPIC_PRICES, OPENAI_PRICES, GOOGLE_PRICES, XAI_PRICES]
    assert sum(len(table) for table in tables) == len(DEFAULT_PRICES)


def test_a_price_sums_every_kind_of_token():
    assert Price(4, 20, 0.2, 5).cost(MILLION) == pytest.approx(29.2)
    assert Price(4, 20, 0.2, 5).cost(TokenUsage(input=2000, output=200)) == pytest.approx(0.012)


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param(
            IterationResult(cost_usd=0.084, model="claude-opus-5-5", tokens=MILLION),
            Cost(0.084, CostSource.REPORTED),
            id="the reported cost wins",
        ),
        pytest.param(
            IterationResult(cost_usd=0.0, tokens=MILLION),
            Cost(0.0, CostSource.REPORTED),
            id="a reported zero is a cost",
        ),
        pytest.param(
            IterationResult(model="claude-opus-5-5", tokens=TokenUsage(input=2000, output=200)),
            Cost(0.012, CostSource.ESTIMATED),
            id="tokens of a known model are priced",
        ),
        pytest.param(
            IterationResult(
                model="claude-opus-5[1m]",
                model_tokens=(
                    ModelTokens("claude-opus-5-5", TokenUsage(input=1_000_000)),
                    ModelTokens("claude-haiku-4-5-20251001", TokenUsage(output=1_000_000)),
                ),
            ),
            Cost(9.0, CostSource.ESTIMATED),
            id="each model's tokens at its own price",
        ),
        pytest.param(
            IterationResult(model="llama-3.3-70b", tokens=TokenUsage(input=10)),
            Cost(None, None, ("llama-3.3-70b",)),
            id="unknown model: no cost",
        ),
        pytest.param(
            IterationResult(model="gpt-5-codex", tokens=TokenUsage(input=800_000, output=10_000)),
            Cost(1.1, CostSource.ESTIMATED),
            id="an OpenAI model's tokens are priced",
        ),
        pytest.param(
            IterationResult(
                model_tokens=(
                    ModelTokens("claude-opus-5-5", TokenUsage(input=10)),
                    ModelTokens("mystery", TokenUsage(input=10)),
                )
            ),
            Cost(None, None, ("mystery",)),
            id="one unknown model: no partial cost",
        ),
        pytest.param(
            IterationResult(tokens=TokenUsage(input=10)),
            Cost(None, None, (UNNAMED_MODEL,)),
            id="tokens without a model",
        ),
        pytest.param(IterationResult(), Cost(None, None), id="nothing reported"),
    ],
)
def test_iteration_cost(result, expected):
    assert iteration_cost(result) == expected


def test_user_prices_override_and_extend_the_table():
    prices = {
        **DEFAULT_PRICES,
        "gpt-5": Price(2, 10, 0.125, 0),
        "llama-3": Price(0.5, 0.5, 0.5, 0.5),
        "claude-opus-5-5": Price(1, 1, 1, 1),
    }
    tokens = TokenUsage(input=1_000_000)
    assert iteration_cost(IterationResult(model="gpt-5-codex", tokens=tokens), prices) == Cost(
        2.0, CostSource.ESTIMATED
    )
    assert iteration_cost(IterationResult(model="gpt-5-mini", tokens=tokens), prices) == Cost(
        0.25, CostSource.ESTIMATED
    )  # a longer shipped prefix still wins for its models
    assert iteration_cost(IterationResult(model="llama-3.3", tokens=tokens), prices) == Cost(
        0.5, CostSource.ESTIMATED
    )
    assert iteration_cost(IterationResult(model="claude-opus-5-5", tokens=tokens), prices) == Cost(
        1.0, CostSource.ESTIMATED
    )


@pytest.mark.parametrize(("include_cache", "tokens"), [(False, 300), (True, 300 + 4000 + 50)])
def test_the_token_budget_counts_cache_tokens_only_when_configured(include_cache, tokens):
    usage = TokenUsage(input=100, output=200, cache_read=4000, cache_write=50)
    assert usage.counted(include_cache=include_cache) == tokens


# --- through the Claude parser ------------------------------------------------------------


def real_cli(name: str, code: int = 0) -> IterationResult:
    lines = (REAL_CLI_CASSETTES / f"{name}.jsonl").read_bytes().splitlines()
    return replay_lines(lines, exited(code))[1]


def test_the_shipped_price_matches_what_claude_code_reports_for_the_same_tokens():
    result = real_cli("bash_allowed")
    assert (result.model, result.terminal_reason, result.truncated) == (
        "claude-opus-5-5",
        "completed",
        False,
    )
    assert result.model_tokens == (
        ModelTokens("claude-opus-5-5", TokenUsage(input=2000, output=200)),
    )
    assert result.tool_uses == (ToolUse("Bash", "echo hello", tool_use_id="toolu_mock_000"),)
    estimated = iteration_cost(replace(result, cost_usd=None))
    assert estimated.source is CostSource.ESTIMATED
    assert estimated.usd == pytest.approx(iteration_cost(result).usd)


def test_a_killed_run_reports_neither_cost_nor_tokens():
    _, result = replay_lines(cassette_lines("killed_no_result"), exited(None, interrupted=True))
    assert result.truncated
    assert iteration_cost(result) == Cost(None, None)
