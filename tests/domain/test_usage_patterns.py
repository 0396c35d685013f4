"""The user's patterns for a plain-text agent's tokens and cost."""

from __future__ import annotations

import pytest

from ralphctl.domain.usage_patterns import (
    LineUsage,
    amount,
    cost_pattern,
    line_usage,
    tokens_pattern,
)

AIDER_TOKENS = r"Tokens: (?P<input>[0-9.,]+[kM]?) sent, (?P<output>[0-9.,]+[kM]?) received"
AIDER_COST = r"Cost: \$(?P<cost>[0-9.]+) message"


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("1234", 1234.0),
        ("1,234", 1234.0),
        ("1_234", 1234.0),
        ("2.3k", 2300.0),
        ("1.2M", 1_200_000.0),
        ("$0.05", 0.05),
        (" 7 ", 7.0),
        (".5", 0.5),
    ],
)
def test_numbers_are_read_as_agents_print_them(text: str, number: float) -> None:
    assert amount(text) == pytest.approx(number)


@pytest.mark.parametrize("text", ["", None, "abc", "1.2.3", "-5", "1e5", "9" * 400])
def test_what_is_not_a_finite_amount_is_none(text: str | None) -> None:
    assert amount(text) is None


def test_a_line_reports_its_tokens_and_cost() -> None:
    line = "Tokens: 2.3k sent, 120 received. Cost: $0.0012 message, $0.0034 session."

    usage = line_usage(line, tokens_pattern(AIDER_TOKENS), cost_pattern(AIDER_COST))

    assert usage == LineUsage({"input": 2300, "output": 120}, cost_usd=0.0012)


def test_a_line_matching_neither_pattern_reports_nothing() -> None:
    assert line_usage("Editing app.py", tokens_pattern(AIDER_TOKENS), None) is None


def test_a_model_group_names_the_model() -> None:
    pattern = tokens_pattern(r"\[(?P<model>[\w.-]+)\] in=(?P<input>\d+) out=(?P<output>\d+)")

    usage = line_usage("[gpt-5-codex] in=100 out=20", pattern, None)

    assert usage == LineUsage({"input": 100, "output": 20}, model="gpt-5-codex")


def test_an_optional_group_that_did_not_match_counts_nothing() -> None:
    pattern = tokens_pattern(r"in=(?P<input>\d+)(?: cached=(?P<cache_read>\d+))?")

    assert line_usage("in=10", pattern, None) == LineUsage({"input": 10})


def test_a_tokens_pattern_needs_an_input_or_output_group() -> None:
    with pytest.raises(ValueError, match=r"needs a named group \(\?P<input>"):
        tokens_pattern(r"Tokens: (\d+)")


def test_a_tokens_pattern_refuses_groups_it_does_not_know() -> None:
    with pytest.raises(ValueError, match=r"unknown group.*inptu"):
        tokens_pattern(r"(?P<inptu>\d+) (?P<output>\d+)")


def test_a_cost_pattern_needs_its_cost_group() -> None:
    with pytest.raises(ValueError, match=r"needs a named group \(\?P<cost>"):
        cost_pattern(r"Cost: \$([0-9.]+)")


def test_an_invalid_regular_expression_is_explained() -> None:
    with pytest.raises(ValueError, match="not a valid regular expression"):
        cost_pattern(r"(?P<cost>[0-9.]+")
