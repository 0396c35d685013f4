"""The stop rules themselves, free of ``enum``: both loop modes end a loop through them.

The Stop hook decides on every stop of every session, in a fresh process, and ``import enum``
(with the ``functools`` and ``collections`` it loads) costs more than the rest of its
decision. So the rules name their reasons with plain strings, which are the values of
``states.StopReason``; ``conditions.evaluate`` wraps them in the enums for the engine.
"""

from __future__ import annotations

from ralphctl.domain.money import format_usd
from ralphctl.domain.value import value

COMPLETION = "completion"
BLOCKED = "blocked"
MAX_ITERATIONS = "max_iterations"
MAX_RUNTIME = "max_runtime"
MAX_COST = "max_cost"
MAX_TOKENS = "max_tokens"
CIRCUIT_BREAKER = "circuit_breaker"


@value(frozen=True, slots=True)
class Budgets:
    """The limits of one loop; ``None`` means that limit is off."""

    max_iterations: int | None = None
    max_runtime_s: float | None = None
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_consecutive_errors: int | None = None


@value(frozen=True, slots=True)
class Totals:
    """What a loop has used so far (persisted, so it survives restarts)."""

    iterations: int = 0
    runtime_s: float = 0.0
    cost_usd: float = 0.0
    tokens: int = 0
    consecutive_errors: int = 0


def first_stop(
    totals: Totals,
    budgets: Budgets,
    *,
    completed: bool = False,
    blocked_reason: str | None = None,
    breaker_trip: str | None = None,
) -> tuple[str, str] | None:
    """The first rule that ends the loop, as ``(reason, detail)``; None if none does.

    The seed's order: completion, blocked, iterations, runtime, cost, tokens, consecutive
    errors (or a tripped circuit breaker, ``breaker_trip`` being its reason).
    """
    if completed:
        return COMPLETION, "the agent declared completion"
    if blocked_reason is not None:
        return BLOCKED, blocked_reason
    for reason, used, limit, unit in _limits(totals, budgets):
        if limit is not None and used >= limit:
            return reason, f"{_fmt(used, unit)} (limit {_fmt(limit, unit)})"
    if breaker_trip is not None:
        return CIRCUIT_BREAKER, breaker_trip
    return None


def _limits(totals: Totals, budgets: Budgets) -> tuple[tuple[str, float, float | None, str], ...]:
    return (
        (MAX_ITERATIONS, totals.iterations, budgets.max_iterations, "iterations"),
        (MAX_RUNTIME, totals.runtime_s, budgets.max_runtime_s, "s"),
        (MAX_COST, totals.cost_usd, budgets.max_cost_usd, "$"),
        (MAX_TOKENS, totals.tokens, budgets.max_tokens, "tokens"),
        (
            CIRCUIT_BREAKER,
            totals.consecutive_errors,
            budgets.max_consecutive_errors,
            "consecutive errors",
        ),
    )


def _fmt(amount: float, unit: str) -> str:
    if unit == "$":
        return format_usd(amount)
    if unit == "s":
        return f"{amount:.0f}s"
    return f"{amount:g} {unit}"
