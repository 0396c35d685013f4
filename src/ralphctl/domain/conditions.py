"""Stop conditions: one pure function that both loop modes ask after every iteration."""

from __future__ import annotations

from enum import StrEnum

from ralphctl.domain.states import StopReason
from ralphctl.domain.value import value


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


class ExternalSignal(StrEnum):
    """A request from outside the loop (CLI, API, sentinel file)."""

    STOP = "stop"
    PAUSE = "pause"


class Action(StrEnum):
    CONTINUE = "continue"
    STOP = "stop"
    PAUSE = "pause"


@value(frozen=True, slots=True)
class Decision:
    action: Action
    reason: StopReason | None = None
    detail: str = ""

    @property
    def stops(self) -> bool:
        return self.action is Action.STOP


CONTINUE = Decision(Action.CONTINUE)


def evaluate(
    totals: Totals,
    budgets: Budgets,
    *,
    completed: bool = False,
    blocked_reason: str | None = None,
    breaker_trip: str | None = None,
    external: ExternalSignal | None = None,
) -> Decision:
    """Decide whether the loop goes on, in the seed's order.

    Completion, blocked, iterations, runtime, cost, tokens, consecutive errors (or a tripped
    circuit breaker, ``breaker_trip`` being its reason), then external signals: the first rule
    that fires decides. Call it with no signals to ask whether a new iteration may start at
    all (e.g. when resuming with spent budgets).
    """
    if completed:
        return Decision(Action.STOP, StopReason.COMPLETION, "the agent declared completion")
    if blocked_reason is not None:
        return Decision(Action.STOP, StopReason.BLOCKED, blocked_reason)
    for reason, used, limit, unit in _limits(totals, budgets):
        if limit is not None and used >= limit:
            return Decision(Action.STOP, reason, f"{_fmt(used, unit)} (limit {_fmt(limit, unit)})")
    if breaker_trip is not None:
        return Decision(Action.STOP, StopReason.CIRCUIT_BREAKER, breaker_trip)
    if external is ExternalSignal.STOP:
        return Decision(Action.STOP, StopReason.USER_STOP, "stop requested")
    if external is ExternalSignal.PAUSE:
        return Decision(Action.PAUSE, None, "pause requested")
    return CONTINUE


def _limits(
    totals: Totals, budgets: Budgets
) -> tuple[tuple[StopReason, float, float | None, str], ...]:
    return (
        (StopReason.MAX_ITERATIONS, totals.iterations, budgets.max_iterations, "iterations"),
        (StopReason.MAX_RUNTIME, totals.runtime_s, budgets.max_runtime_s, "s"),
        (StopReason.MAX_COST, totals.cost_usd, budgets.max_cost_usd, "$"),
        (StopReason.MAX_TOKENS, totals.tokens, budgets.max_tokens, "tokens"),
        (
            StopReason.CIRCUIT_BREAKER,
            totals.consecutive_errors,
            budgets.max_consecutive_errors,
            "consecutive errors",
        ),
    )


def _fmt(value: float, unit: str) -> str:
    if unit == "$":
        return f"${value:.4f}"
    if unit == "s":
        return f"{value:.0f}s"
    return f"{value:g} {unit}"


@value(frozen=True, slots=True)
class Remaining:
    """Budget left before the next iteration; ``None`` where the limit is off."""

    iterations: int | None
    runtime_s: float | None
    cost_usd: float | None
    tokens: int | None


def remaining(totals: Totals, budgets: Budgets) -> Remaining:
    """What is left of each budget (never negative)."""

    def left(limit: float | None, used: float) -> float | None:
        return None if limit is None else max(0.0, limit - used)

    iterations = left(budgets.max_iterations, totals.iterations)
    tokens = left(budgets.max_tokens, totals.tokens)
    return Remaining(
        iterations=None if iterations is None else int(iterations),
        runtime_s=left(budgets.max_runtime_s, totals.runtime_s),
        cost_usd=left(budgets.max_cost_usd, totals.cost_usd),
        tokens=None if tokens is None else int(tokens),
    )
