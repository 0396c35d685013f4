"""Read a ralphctl tracker's frontmatter as a ``LoopState``, checking every value.

The tracker is a file anyone can edit between two stops, so its numbers are checked on every
Stop with the validator arming uses (``ralphctl.domain.numbers``): a NaN, infinite, negative
or absurd budget must never switch a budget off. A value of the wrong type or out of range
is ``CorruptTracker``, whose message starts with the field's name: the hook then deactivates
the loop and lets the agent stop, rather than guess.
"""

from __future__ import annotations

from ralphctl.domain import defaults, numbers
from ralphctl.domain.markers import parse_marker
from ralphctl.domain.stoprules import Budgets, Totals
from ralphctl.hook.clock import epoch
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.stop import LoopState
from ralphctl.hook.tracker import Tracker

TYPE_CHECKING = False
if TYPE_CHECKING:  # collections.abc costs more than this module's work on the hot path
    from collections.abc import Callable


class CorruptTracker(ValueError):
    """A tracker whose frontmatter parses but whose values make no sense."""


def loop_state(tracker: Tracker, now: float) -> LoopState:
    """The decision's view of one of our trackers at Unix time ``now``."""
    fields = tracker.fields
    max_iterations = optional_int(fields, "max_iterations", minimum=1)
    max_runtime = optional_number(fields, "max_runtime_s", check=_seconds)
    if max_iterations is None and max_runtime is None:
        raise CorruptTracker("a loop needs a bound: max_iterations or max_runtime_s")
    signal = required_str(fields, "completion_marker")
    try:
        marker = parse_marker(signal)
    except ValueError as exc:
        raise CorruptTracker(f"completion_marker: {exc}") from None
    continue_message = optional_str(fields, "continue_message") or defaults.CONTINUE_MESSAGE
    return LoopState(
        iteration=required_int(fields, "iteration", minimum=0),
        budgets=Budgets(
            max_iterations=max_iterations,
            max_runtime_s=max_runtime,
            max_cost_usd=optional_number(fields, "max_cost_usd", check=numbers.cost),
            max_tokens=optional_int(fields, "max_tokens", minimum=1),
        ),
        totals=Totals(
            runtime_s=max(0.0, now - started_at(fields)),
            cost_usd=optional_number(fields, "cost_usd", check=_spent) or 0.0,
            tokens=optional_int(fields, "tokens", minimum=0) or 0,
        ),
        marker=marker,
        reason=(
            f"{continue_message}\n\nTracker: {tracker.path}\n"
            f"When the task is completely done, end your reply with the line {marker.signal}"
        ),
        body=tracker.body,
        last_decision=optional_str(fields, "last_decision"),
        stop_hook_active_count=optional_int(fields, "stop_hook_active_count", minimum=0) or 0,
        cap_overrides=optional_int(fields, "cap_overrides", minimum=0) or 0,
        clear_context=fields.get("clear_context") is True,
    )


def started_at(fields: dict[str, Scalar]) -> float:
    text = required_str(fields, "started_at")
    try:
        return epoch(text)
    except ValueError:
        raise CorruptTracker(f"started_at is not an ISO 8601 time: {text!r}") from None


def required_str(fields: dict[str, Scalar], key: str) -> str:
    value = optional_str(fields, key)
    if value is None:
        raise CorruptTracker(f"{key} is missing")
    return value


def optional_str(fields: dict[str, Scalar], key: str) -> str | None:
    value = fields.get(key)
    if value is not None and not isinstance(value, str):
        raise CorruptTracker(f"{key} must be text, not {value!r}")
    return value


def required_int(fields: dict[str, Scalar], key: str, *, minimum: int) -> int:
    value = optional_int(fields, key, minimum=minimum)
    if value is None:
        raise CorruptTracker(f"{key} is missing")
    return value


def optional_int(fields: dict[str, Scalar], key: str, *, minimum: int) -> int | None:
    value = fields.get(key)
    if value is None:
        return None
    try:
        return numbers.whole(value, minimum=minimum)
    except ValueError as exc:
        raise CorruptTracker(f"{key} {exc}") from None


def optional_number(
    fields: dict[str, Scalar], key: str, *, check: Callable[[object], float]
) -> float | None:
    """``fields[key]`` through ``check`` (a ``numbers`` validator); None when absent."""
    value = fields.get(key)
    if value is None:
        return None
    try:
        return check(value)
    except ValueError as exc:
        raise CorruptTracker(f"{key} {exc}") from None


def _seconds(value: object) -> float:
    """A runtime budget: a number of seconds (never text) in (0, a year]."""
    return numbers.bounded(
        value, low=0.0, high=numbers.MAX_SECONDS, low_open=True, what="a number of seconds"
    )


def _spent(value: object) -> float:
    """The cost spent so far: an amount in USD, zero included."""
    return numbers.cost(value, allow_zero=True)
