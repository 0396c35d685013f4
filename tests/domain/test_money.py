"""One way to show money to people, and one rounding of costs in JSON."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ralphctl.domain.money import format_usd, round_costs, round_usd


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        (0.0, "$0.00"),
        (0.45000000000000007, "$0.45"),
        (0.4217, "$0.42"),
        (0.01, "$0.01"),
        (12.3, "$12.30"),
        (1234.5, "$1,234.50"),
        (300, "$300.00"),
        (0.0042, "$0.0042"),
        (0.007, "$0.007"),
        (0.00013, "$0.00013"),
        (0.009999, "$0.01"),
        (0.000001, "$0.000001"),
        (4e-9, "<$0.000001"),
        (-0.45, "-$0.45"),
        (math.inf, "$inf"),
    ],
)
def test_amounts_read_as_dollars_and_cents_and_cheap_ones_keep_two_digits(amount, shown):
    assert format_usd(amount) == shown


@given(st.floats(min_value=1e-6, max_value=1e9))
def test_a_positive_amount_never_reads_as_zero_and_stays_close(amount: float) -> None:
    shown = format_usd(amount)
    assert shown.startswith("$")
    assert shown != "$0.00"
    value = float(shown[1:].replace(",", ""))
    assert math.isclose(value, amount, rel_tol=0.05, abs_tol=0.005)


def test_json_costs_lose_their_float_noise():
    assert round_usd(0.1 + 0.2 + 0.15) == 0.45


def test_costs_are_rounded_at_any_depth_and_nothing_else_is():
    data = {
        "cost_usd": 0.1 + 0.2,
        "ratio": 0.1 + 0.2,
        "config": {"max_cost_usd": 2.0000000000000004, "costs": {"*": {"input": 3.0000001}}},
        "iterations": [{"cost_usd": 0.15000000000000002, "n": 1}, {"cost_usd": None}],
        "total_cost": 1 / 3,
        "total_usd": 2 / 3,
    }
    assert round_costs(data) == {
        "cost_usd": 0.3,
        "ratio": 0.1 + 0.2,
        "config": {"max_cost_usd": 2.0, "costs": {"*": {"input": 3.0000001}}},
        "iterations": [{"cost_usd": 0.15, "n": 1}, {"cost_usd": None}],
        "total_cost": 0.333333,
        "total_usd": 0.666667,
    }
