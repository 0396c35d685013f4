from typing import Any

import pytest

from ralphctl.domain import stoprules
from ralphctl.domain.conditions import (
    Action,
    ExternalSignal,
    evaluate,
    remaining,
)
from ralphctl.domain.states import StopReason
from ralphctl.domain.stoprules import Budgets, Totals

BUDGETS = Budgets(
    max_iterations=10,
    max_runtime_s=3600,
    max_cost_usd=5.0,
    max_tokens=100_000,
    max_consecutive_errors=5,
)
FRESH = Totals()


def test_a_fresh_loop_continues():
    decision = evaluate(FRESH, BUDGETS)
    assert decision.action is Action.CONTINUE
    assert decision.reason is None


@pytest.mark.parametrize(
    ("totals", "reason"),
    [
        (Totals(iterations=10), StopReason.MAX_ITERATIONS),
        (Totals(iterations=11), StopReason.MAX_ITERATIONS),
        (Totals(runtime_s=3600), StopReason.MAX_RUNTIME),
        (Totals(cost_usd=5.0), StopReason.MAX_COST),
        (Totals(cost_usd=7.3), StopReason.MAX_COST),
        (Totals(tokens=100_000), StopReason.MAX_TOKENS),
        (Totals(consecutive_errors=5), StopReason.CIRCUIT_BREAKER),
    ],
)
def test_each_budget_stops_the_loop_when_reached(totals, reason):
    decision = evaluate(totals, BUDGETS)
    assert decision.stops
    assert decision.reason is reason
    assert "limit" in decision.detail


@pytest.mark.parametrize(
    "totals",
    [
        Totals(iterations=9),
        Totals(runtime_s=3599.9),
        Totals(cost_usd=4.99),
        Totals(tokens=99_999),
        Totals(consecutive_errors=4),
    ],
)
def test_just_below_every_budget_the_loop_continues(totals):
    assert evaluate(totals, BUDGETS).action is Action.CONTINUE


def test_budgets_that_are_off_never_stop():
    huge = Totals(iterations=10**9, runtime_s=1e12, cost_usd=1e9, tokens=10**12)
    assert evaluate(huge, Budgets()).action is Action.CONTINUE


def test_completion_wins_over_every_limit():
    spent = Totals(iterations=10, runtime_s=4000, cost_usd=9, tokens=10**6, consecutive_errors=9)
    decision = evaluate(spent, BUDGETS, completed=True, external=ExternalSignal.STOP)
    assert decision.reason is StopReason.COMPLETION


def test_blocked_comes_right_after_completion_and_keeps_its_reason():
    decision = evaluate(Totals(iterations=10), BUDGETS, blocked_reason="needs an API key")
    assert decision.reason is StopReason.BLOCKED
    assert decision.detail == "needs an API key"
    assert evaluate(FRESH, BUDGETS, completed=True, blocked_reason="x").reason is (
        StopReason.COMPLETION
    )


def test_limits_are_checked_in_the_seed_order():
    order = []
    values: dict[str, Any] = {
        "iterations": 10,
        "runtime_s": 3600.0,
        "cost_usd": 5.0,
        "tokens": 100_000,
        "consecutive_errors": 5,
    }
    for field in list(values):
        order.append(evaluate(Totals(**values), BUDGETS).reason)
        values[field] = 0
    assert order == [
        StopReason.MAX_ITERATIONS,
        StopReason.MAX_RUNTIME,
        StopReason.MAX_COST,
        StopReason.MAX_TOKENS,
        StopReason.CIRCUIT_BREAKER,
    ]


def test_a_tripped_breaker_stops_after_the_budgets_and_before_external_signals():
    tripped = evaluate(FRESH, BUDGETS, breaker_trip="3 iterations made no progress")
    assert tripped.reason is StopReason.CIRCUIT_BREAKER
    assert tripped.detail == "3 iterations made no progress"
    spent = evaluate(Totals(tokens=100_000), BUDGETS, breaker_trip="x")
    assert spent.reason is StopReason.MAX_TOKENS
    stop = evaluate(FRESH, BUDGETS, breaker_trip="x", external=ExternalSignal.STOP)
    assert stop.reason is StopReason.CIRCUIT_BREAKER


def test_external_signals_come_last():
    assert evaluate(FRESH, BUDGETS, external=ExternalSignal.STOP).reason is StopReason.USER_STOP
    pause = evaluate(FRESH, BUDGETS, external=ExternalSignal.PAUSE)
    assert pause.action is Action.PAUSE
    assert pause.reason is None
    spent = evaluate(Totals(iterations=10), BUDGETS, external=ExternalSignal.PAUSE)
    assert spent.reason is StopReason.MAX_ITERATIONS


def test_remaining_budget_is_never_negative():
    left = remaining(Totals(iterations=3, runtime_s=4000, cost_usd=1.25, tokens=10), BUDGETS)
    assert left.iterations == 7
    assert left.runtime_s == 0
    assert left.cost_usd == pytest.approx(3.75)
    assert left.tokens == 99_990


def test_remaining_is_none_where_a_budget_is_off():
    left = remaining(FRESH, Budgets())
    assert (left.iterations, left.runtime_s, left.cost_usd, left.tokens) == (None,) * 4


def test_values_are_immutable_and_compare_by_value():
    assert Totals(iterations=3) == Totals(iterations=3)
    assert Totals(iterations=3) != Totals(iterations=4)
    assert hash(Budgets(max_iterations=2)) == hash(Budgets(max_iterations=2))
    assert repr(Totals(iterations=1)).startswith("Totals(iterations=1, runtime_s=0.0")
    with pytest.raises(AttributeError, match="immutable"):
        Totals().iterations = 5  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected"):
        Totals(iteration=5)  # type: ignore[call-arg]


def test_every_reason_of_the_enum_free_stop_rules_is_a_stop_reason():
    reasons = {
        value for name, value in vars(stoprules).items() if name.isupper() and name.isidentifier()
    }
    assert reasons == {str(reason) for reason in StopReason} - {
        "user_stop",
        "interrupted",
        "agent_unavailable",
        "store_failed",
    }
