"""Each claude process's reported totals, spread over the iterations it ran."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ralphctl.domain.costs import DEFAULT_PRICES, Cost, CostSource
from ralphctl.domain.model import IterationResult, TokenUsage
from ralphctl.engine.hookmode.attribution import SessionTotals, settle, spread, spread_int
from ralphctl.engine.hookmode.usage import Usage
from ralphctl.store.records import IterationRecord

REPORTED = Cost(0.03, CostSource.REPORTED)


def estimated(n: int, cost: float, tokens_in: int, tokens_out: int) -> IterationRecord:
    return IterationRecord(
        loop_id="loop",
        n=n,
        started_at=datetime(2026, 11, 22, tzinfo=UTC),
        status="ok",
        tokens_input=tokens_in,
        tokens_output=tokens_out,
        cost_usd=cost,
        cost_source="estimated",
    )


def test_the_reported_totals_are_spread_in_proportion_to_the_estimates():
    ran = [estimated(1, 0.008, 2000, 10), estimated(2, 0.004, 1000, 30)]
    first, second = settle(ran, TokenUsage(input=3000, output=400), REPORTED)
    assert (first.cost_usd, second.cost_usd) == pytest.approx((0.02, 0.01))
    assert (first.tokens_input, second.tokens_input) == (2000, 1000)
    assert (first.tokens_output, second.tokens_output) == (100, 300)
    assert {first.cost_source, second.cost_source} == {"reported"}


def test_what_nothing_estimated_goes_to_the_last_iteration():
    ran = [estimated(1, 0.0, 0, 0), estimated(2, 0.0, 0, 0)]
    first, second = settle(ran, TokenUsage(cache_read=500), REPORTED)
    assert (first.tokens_cache_read, second.tokens_cache_read) == (0, 500)
    assert (first.cost_usd, second.cost_usd) == (0.0, 0.03)


def test_without_a_reported_cost_the_estimated_costs_stay():
    ran = [estimated(1, 0.008, 2000, 10)]
    [only] = settle(ran, TokenUsage(input=2000, output=50), Cost(None, None))
    assert (only.cost_usd, only.cost_source, only.tokens_output) == (0.008, "estimated", 50)


@given(st.integers(0, 10**9), st.lists(st.integers(0, 10**6), min_size=1, max_size=30))
def test_whole_shares_always_add_up_to_the_total(total, weights):
    shares = spread_int(total, weights)
    assert sum(shares) == total
    assert all(share >= 0 for share in shares)


@given(
    st.floats(0, 1000, allow_nan=False),
    st.lists(st.floats(0, 10, allow_nan=False), min_size=1, max_size=30),
)
@example(1.5, [5e-324, 0.0])  # a subnormal weight: 1.5 * 5e-324 / 5e-324 is 2.0
def test_cost_shares_add_up_to_the_total(total, weights):
    shares = spread(total, weights)
    assert sum(shares) == pytest.approx(total, abs=1e-9)
    assert all(share >= 0 for share in shares)


def result(tokens: TokenUsage, cost: float) -> IterationResult:
    return IterationResult(tokens=tokens, cost_usd=cost)


def test_a_process_that_reports_its_own_usage_is_taken_at_its_word():
    totals = SessionTotals(DEFAULT_PRICES)
    own = Usage(TokenUsage(input=1000, output=100), 0.006)
    cumulative = result(TokenUsage(input=3000, output=300), 0.018)
    assert totals.of_run(cumulative, own, resumed=True) == (
        own.tokens,
        Cost(0.006, CostSource.REPORTED),
    )


def test_a_resumed_session_reports_the_whole_session_so_the_previous_runs_are_subtracted():
    totals = SessionTotals(DEFAULT_PRICES)
    first = totals.of_run(result(TokenUsage(input=4000, output=400), 0.024), None, resumed=False)
    second = totals.of_run(result(TokenUsage(input=6000, output=600), 0.036), None, resumed=True)
    assert first == (TokenUsage(input=4000, output=400), Cost(0.024, CostSource.REPORTED))
    assert second is not None
    assert second[0] == TokenUsage(input=2000, output=200)
    assert second[1].usd == pytest.approx(0.012)


def test_a_cli_that_counts_per_process_is_recognised_by_smaller_totals():
    totals = SessionTotals(DEFAULT_PRICES)
    totals.of_run(result(TokenUsage(input=4000, output=400), 0.024), None, resumed=False)
    second = totals.of_run(result(TokenUsage(input=1000, output=100), 0.006), None, resumed=True)
    assert second == (TokenUsage(input=1000, output=100), Cost(0.006, CostSource.REPORTED))


def test_a_process_without_a_result_line_reports_nothing():
    killed = IterationResult(truncated=True)
    assert SessionTotals(DEFAULT_PRICES).of_run(killed, None, resumed=False) is None
