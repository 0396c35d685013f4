"""The circuit breaker: end (or pause) a loop that keeps failing or stops making progress.

CLOSED: iterations run, and each recorded outcome updates four streaks (errors, identical
errors, iterations without progress, iterations with permission denials and no progress).
When a streak reaches its threshold the breaker trips: OPEN, with the cause and a reason.
OPEN ends the loop as failed, unless ``auto_recover`` is on: then the loop waits out the
cooldown, and HALF_OPEN lets one trial iteration through. The trial closes the breaker if it
fixes what tripped it (no error after an error trip, progress after a no-progress or
permission trip); otherwise the breaker reopens for another cooldown. The streaks are kept
through all this, so a trial that fails in some other way also reopens it.
Interrupted and usage-limited iterations count neither way.

There is no "monitoring" HALF_OPEN before a trip (frankbria's ralph-claude-code enters one
after 2 iterations without progress): HALF_OPEN means only "one trial after the cooldown", and
a streak one short of its threshold is reported by ``near_trip`` instead.

Pure: time comes in as ``now`` (epoch seconds), and the state is plain data (``to_dict`` and
``from_dict``) that the runner persists, so a restart keeps it, in the middle of a cooldown too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TypeVar

STATE_VERSION = 1


class BreakerStatus(StrEnum):
    CLOSED = "closed"
    HALF_OPEN = "half_open"
    OPEN = "open"


class TripCause(StrEnum):
    SAME_ERROR = "same_error"
    CONSECUTIVE_ERRORS = "consecutive_errors"
    PERMISSION_DENIALS = "permission_denials"
    NO_PROGRESS = "no_progress"


@dataclass(frozen=True, slots=True)
class BreakerConfig:
    """Every threshold of the breaker; ``None`` turns that trip condition off."""

    max_consecutive_errors: int | None = 5
    same_error_threshold: int | None = 5
    no_progress_threshold: int | None = 3
    permission_denial_threshold: int | None = 2
    cooldown_s: float = 1800.0
    auto_recover: bool = False
    history_limit: int = 50

    def __post_init__(self) -> None:
        for name in (
            "max_consecutive_errors",
            "same_error_threshold",
            "no_progress_threshold",
            "permission_denial_threshold",
        ):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1 (or None to turn it off): {value}")
        if self.cooldown_s < 0:
            raise ValueError(f"cooldown_s cannot be negative: {self.cooldown_s}")
        if self.history_limit < 1:
            raise ValueError(f"history_limit must be at least 1: {self.history_limit}")


@dataclass(frozen=True, slots=True)
class IterationOutcome:
    """What the breaker needs to know about one finished iteration.

    ``progressed``: the engine saw files change during the iteration (commits included) or the
    agent declared changes. ``interrupted`` (the user stopped it) and ``usage_limited`` (the
    provider's usage limit cut it short) make the iteration count neither way.
    """

    iteration: int
    errored: bool = False
    error_signature: str | None = None
    progressed: bool = False
    denied_tools: tuple[str, ...] = ()
    interrupted: bool = False
    usage_limited: bool = False


@dataclass(frozen=True, slots=True)
class Transition:
    """One change of breaker status, for the record."""

    at: float
    iteration: int | None
    source: BreakerStatus
    target: BreakerStatus
    reason: str


@dataclass(frozen=True, slots=True)
class BreakerState:
    """The breaker of one loop: status, streaks and a bounded transition history."""

    status: BreakerStatus = BreakerStatus.CLOSED
    reason: str = ""
    cause: TripCause | None = None
    opened_at: float | None = None
    consecutive_errors: int = 0
    same_error: int = 0
    last_error: str | None = None
    no_progress: int = 0
    denials: int = 0
    denied_tools: tuple[str, ...] = ()
    trips: int = 0
    history: tuple[Transition, ...] = ()


class BreakerAction(StrEnum):
    RUN = "run"
    WAIT = "wait"
    TRIP = "trip"


@dataclass(frozen=True, slots=True)
class Verdict:
    """May the next iteration run? ``state`` is the breaker to persist (a cooldown that has
    passed moves OPEN to HALF_OPEN); ``until`` is when to ask again after WAIT."""

    action: BreakerAction
    state: BreakerState
    reason: str = ""
    until: float | None = None


def record(
    state: BreakerState, outcome: IterationOutcome, config: BreakerConfig, now: float
) -> BreakerState:
    """The breaker after one more iteration: streaks updated, tripped or closed as due.

    An outcome recorded while OPEN (the runner ran an iteration anyway, e.g. after a manual
    resume) is judged like a trial.
    """
    if outcome.interrupted or outcome.usage_limited:
        return state
    counted = _count(state, outcome)
    tripped = _trip(counted, config)
    if state.status is not BreakerStatus.CLOSED:
        failure = tripped or _failed_trial(state, outcome)
        if failure is None:
            closed = replace(counted, cause=None, opened_at=None)
            reason = "the trial iteration went well"
            return _move(closed, BreakerStatus.CLOSED, reason, outcome.iteration, now, config)
        tripped = (failure[0], f"the trial iteration failed: {failure[1]}")
    if tripped is None:
        return counted
    cause, reason = tripped
    opened = replace(counted, cause=cause, opened_at=now, trips=counted.trips + 1)
    return _move(opened, BreakerStatus.OPEN, reason, outcome.iteration, now, config)


def check(state: BreakerState, config: BreakerConfig, now: float) -> Verdict:
    """Whether the next iteration may run, must wait (auto_recover) or the loop fails."""
    if state.status is not BreakerStatus.OPEN:
        return Verdict(BreakerAction.RUN, state)
    if not config.auto_recover:
        return Verdict(BreakerAction.TRIP, state, state.reason)
    opened_at = now if state.opened_at is None else state.opened_at
    until = opened_at + config.cooldown_s
    if now < until:
        return Verdict(BreakerAction.WAIT, state, state.reason, until)
    reason = f"cooldown of {config.cooldown_s:g}s over: one trial iteration"
    trial = _move(state, BreakerStatus.HALF_OPEN, reason, None, now, config)
    return Verdict(BreakerAction.RUN, trial, reason)


def allow_trial(
    state: BreakerState, config: BreakerConfig, now: float, *, reason: str = "resumed"
) -> BreakerState:
    """OPEN → HALF_OPEN at once (a resumed loop gets one trial); other states are unchanged."""
    if state.status is not BreakerStatus.OPEN:
        return state
    return _move(state, BreakerStatus.HALF_OPEN, reason, None, now, config)


def reset(
    state: BreakerState, config: BreakerConfig, now: float, *, reason: str = "reset by the user"
) -> BreakerState:
    """CLOSED with every streak cleared; the trip count and the history are kept."""
    cleared = BreakerState(status=state.status, trips=state.trips, history=state.history)
    return _move(cleared, BreakerStatus.CLOSED, reason, None, now, config)


def near_trip(state: BreakerState, config: BreakerConfig) -> tuple[str, ...]:
    """One sentence per streak that one more bad iteration would trip (for the UI and prompt)."""
    if state.status is BreakerStatus.OPEN:
        return ()
    streaks = (
        (state.no_progress, config.no_progress_threshold, "iterations in a row made no progress"),
        (state.consecutive_errors, config.max_consecutive_errors, "iterations in a row failed"),
        (state.same_error, config.same_error_threshold, "iterations in a row hit the same error"),
        (state.denials, config.permission_denial_threshold, "iterations in a row hit denials"),
    )
    return tuple(
        f"{count} {what}; one more stops the loop (circuit breaker)"
        for count, threshold, what in streaks
        if threshold is not None and threshold > 1 and count == threshold - 1
    )


def _count(state: BreakerState, outcome: IterationOutcome) -> BreakerState:
    """The streaks after ``outcome``. A failed run without progress leaves the progress streak
    alone: errors have their own thresholds, and must not trip the breaker for "no progress"."""
    signature = outcome.error_signature or "unknown error"
    if outcome.errored:
        same = state.same_error + 1 if signature == state.last_error else 1
        errors, last_error = state.consecutive_errors + 1, signature
    else:
        same, errors, last_error = 0, 0, None
    no_progress = 0 if outcome.progressed else state.no_progress + (0 if outcome.errored else 1)
    if outcome.denied_tools and not outcome.progressed:
        denials = state.denials + 1
        denied = tuple(sorted({*state.denied_tools, *outcome.denied_tools}))
    else:
        denials, denied = 0, ()
    return replace(
        state,
        consecutive_errors=errors,
        same_error=same,
        last_error=last_error,
        no_progress=no_progress,
        denials=denials,
        denied_tools=denied,
    )


def _trip(state: BreakerState, config: BreakerConfig) -> tuple[TripCause, str] | None:
    """The first trip condition met, most specific first, with its reason."""
    if _reached(state.same_error, config.same_error_threshold):
        return TripCause.SAME_ERROR, (
            f"the same error {state.same_error} times in a row: {state.last_error}"
        )
    if _reached(state.consecutive_errors, config.max_consecutive_errors):
        return TripCause.CONSECUTIVE_ERRORS, (
            f"{state.consecutive_errors} failed iterations in a row (last: {state.last_error})"
        )
    if _reached(state.denials, config.permission_denial_threshold):
        tools = ", ".join(state.denied_tools)
        return TripCause.PERMISSION_DENIALS, (
            f"permission denied for {tools} in {state.denials} iterations in a row without "
            "progress: allow these tools (permission mode, allowed tools) or change the task"
        )
    if _reached(state.no_progress, config.no_progress_threshold):
        return TripCause.NO_PROGRESS, (
            f"no progress in {state.no_progress} iterations in a row: no file changed and the "
            "agent declared no changes"
        )
    return None


def _failed_trial(state: BreakerState, outcome: IterationOutcome) -> tuple[TripCause, str] | None:
    """Why a trial that tripped no threshold still failed: it did not fix what tripped it."""
    cause = state.cause or TripCause.CONSECUTIVE_ERRORS
    if outcome.errored:
        return cause, f"it failed too ({outcome.error_signature or 'unknown error'})"
    stalls = cause in (TripCause.NO_PROGRESS, TripCause.PERMISSION_DENIALS)
    if stalls and not outcome.progressed:
        return cause, "it made no progress either"
    return None


def _reached(count: int, threshold: int | None) -> bool:
    return threshold is not None and count >= threshold


def _move(
    state: BreakerState,
    target: BreakerStatus,
    reason: str,
    iteration: int | None,
    now: float,
    config: BreakerConfig,
) -> BreakerState:
    step = Transition(now, iteration, state.status, target, reason)
    history = (*state.history, step)[-config.history_limit :]
    return replace(state, status=target, reason=reason, history=history)


# --- error signatures ------------------------------------------------------------------------

_SIGNATURE_INPUT_CHARS = 500
_SIGNATURE_CHARS = 300
#: Volatile parts of an error message, most specific first: ids, times, paths, numbers.
_VOLATILE = (
    (re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}"), "<uuid>"),
    (
        re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"),
        "<time>",
    ),
    (re.compile(r"[A-Za-z][\w+.-]*://\S+"), "<url>"),
    (re.compile(r"(?:[A-Za-z]:)?[\w.@~+-]*(?:[\\/][\w.@~+-]+)+[\\/]?"), "<path>"),
    (re.compile(r"\b[A-Za-z]+_[A-Za-z0-9]{8,}\b"), "<id>"),
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b"), "<hex>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
)


def error_signature(error_class: str, message: str | None) -> str:
    """``class: message`` with volatile parts (uuids, times, urls, paths, ids, numbers and so
    ports) replaced by placeholders, so that the same failure has the same signature."""
    text = " ".join((message or "")[:_SIGNATURE_INPUT_CHARS].split())
    for pattern, placeholder in _VOLATILE:
        text = pattern.sub(placeholder, text)
    return f"{error_class}: {text}"[:_SIGNATURE_CHARS].rstrip()


# --- persistence -----------------------------------------------------------------------------


def to_dict(state: BreakerState) -> dict[str, object]:
    """A JSON-ready dict of ``state`` (the runner stores it in ``loops.breaker_state``)."""
    return {
        "version": STATE_VERSION,
        "status": str(state.status),
        "reason": state.reason,
        "cause": None if state.cause is None else str(state.cause),
        "opened_at": state.opened_at,
        "consecutive_errors": state.consecutive_errors,
        "same_error": state.same_error,
        "last_error": state.last_error,
        "no_progress": state.no_progress,
        "denials": state.denials,
        "denied_tools": list(state.denied_tools),
        "trips": state.trips,
        "history": [
            {
                "at": step.at,
                "iteration": step.iteration,
                "from": str(step.source),
                "to": str(step.target),
                "reason": step.reason,
            }
            for step in state.history
        ],
    }


def from_dict(data: Mapping[str, object]) -> BreakerState:
    """The state saved by ``to_dict``; absent keys take their defaults, wrong types raise
    ValueError."""
    cause = _optional_str(data, "cause")
    return BreakerState(
        status=_status(data, "status"),
        reason=_optional_str(data, "reason") or "",
        cause=None if cause is None else _enum(TripCause, cause, "cause"),
        opened_at=_optional_float(data, "opened_at"),
        consecutive_errors=_optional_int(data, "consecutive_errors") or 0,
        same_error=_optional_int(data, "same_error") or 0,
        last_error=_optional_str(data, "last_error"),
        no_progress=_optional_int(data, "no_progress") or 0,
        denials=_optional_int(data, "denials") or 0,
        denied_tools=tuple(_str_list(data, "denied_tools")),
        trips=_optional_int(data, "trips") or 0,
        history=tuple(_transition(item) for item in _list(data, "history")),
    )


def _transition(item: object) -> Transition:
    if not isinstance(item, Mapping):
        raise ValueError(f"breaker state: a history entry must be an object, not {item!r}")
    return Transition(
        at=_optional_float(item, "at") or 0.0,
        iteration=_optional_int(item, "iteration"),
        source=_status(item, "from"),
        target=_status(item, "to"),
        reason=_optional_str(item, "reason") or "",
    )


_E = TypeVar("_E", bound=StrEnum)


def _enum(kind: type[_E], value: str, key: str) -> _E:
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"breaker state: {key} cannot be {value!r}") from None


def _status(data: Mapping[str, object], key: str) -> BreakerStatus:
    value = _optional_str(data, key)
    return BreakerStatus.CLOSED if value is None else _enum(BreakerStatus, value, key)


def _typed(data: Mapping[str, object], key: str, kinds: tuple[type, ...], what: str) -> object:
    """``data[key]``, None when absent or null; a value of another type raises ValueError."""
    value = data.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, kinds)):
        raise ValueError(f"breaker state: {key} must be {what}, not {value!r}")
    return value


def _optional_int(data: Mapping[str, object], key: str) -> int | None:
    value = _typed(data, key, (int,), "an integer")
    return value if isinstance(value, int) else None


def _optional_float(data: Mapping[str, object], key: str) -> float | None:
    value = _typed(data, key, (int, float), "a number")
    return float(value) if isinstance(value, int | float) else None


def _optional_str(data: Mapping[str, object], key: str) -> str | None:
    value = _typed(data, key, (str,), "a string")
    return value if isinstance(value, str) else None


def _list(data: Mapping[str, object], key: str) -> list[object]:
    value = _typed(data, key, (list,), "a list")
    return value if isinstance(value, list) else []


def _str_list(data: Mapping[str, object], key: str) -> list[str]:
    items = _list(data, key)
    strings = [item for item in items if isinstance(item, str)]
    if len(strings) != len(items):
        raise ValueError(f"breaker state: {key} must be a list of strings, not {items!r}")
    return strings
