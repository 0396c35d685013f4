"""Stop conditions: one pure function that both loop modes ask after every iteration."""

from __future__ import annotations

from enum import StrEnum

from ralphctl.domain import stoprules
from ralphctl.domain.states import StopReason
from ralphctl.domain.stoprules import Budgets, Totals
from ralphctl.domain.value import value


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

    The stop rules of ``stoprules.first_stop`` (completion, blocked, the budgets, the circuit
    breaker), then external signals: the first rule that fires decides. Call it with no
    signals to ask whether a new iteration may start at all (e.g. when resuming with spent
    budgets).
    """
    fired = stoprules.first_stop(
        totals,
        budgets,
        completed=completed,
        blocked_reason=blocked_reason,
        breaker_trip=breaker_trip,
    )
    if fired is not None:
        return Decision(Action.STOP, StopReason(fired[0]), fired[1])
    if external is ExternalSignal.STOP:
        return Decision(Action.STOP, StopReason.USER_STOP, "stop requested")
    if external is ExternalSignal.PAUSE:
        return Decision(Action.PAUSE, None, "pause requested")
    return CONTINUE


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
