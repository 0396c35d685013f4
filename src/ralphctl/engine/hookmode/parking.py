"""A hook-mode loop parked by a usage limit, as a fresh loop is: never an error, the same
session continued once the limit resets.

An API error ends Claude Code's turn without a Stop (it fires ``StopFailure``, whose
``error`` and ``last_assistant_message`` repeat what the session's ``result`` line says), so
the runner judges the ``claude`` process's result with the rule fresh loops use
(``domain.usage_limits``): 2.1.330 reports ``rate_limit`` and HTTP status 429, 2.1.100 only
``API Error: 429 {…rate_limit_error…}`` in its final text. While parked the loop is
``rate_limited`` until the reset, and a stop or pause request ends the wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from ralphctl.domain.conditions import ExternalSignal
from ralphctl.domain.events import EventType
from ralphctl.domain.model import IterationResult
from ralphctl.domain.states import LoopStatus, transition
from ralphctl.domain.usage_limits import UsageLimit, detect_usage_limit
from ralphctl.engine.hookmode.history import History

WAIT_POLL_S = 1.0  # how often a wait looks for a stop or pause request


def session_usage_limit(result: IterationResult, default_wait_s: float) -> UsageLimit | None:
    """The usage limit that ended the session's ``claude`` run, if one did."""
    return detect_usage_limit(result, time.time(), default_wait_s=default_wait_s)


def limit_detail(limit: UsageLimit) -> str:
    """What the parked iteration records as its message."""
    return f"usage limit ({limit.source}): {limit.raw}"


async def wait_out(
    history: History,
    limit: UsageLimit,
    interrupt: asyncio.Event,
    external: Callable[[], ExternalSignal | None],
) -> ExternalSignal | None:
    """Park the loop until ``limit`` resets; the stop or pause request that ended the wait
    early, if any (an interrupt ends it too: the caller sees ``interrupt``). The loop is
    ``running`` again when this returns."""
    until = datetime.fromtimestamp(limit.resets_at, UTC)
    reason = f"usage limit ({limit.source})"
    _set_status(history, LoopStatus.RATE_LIMITED, until, reason)
    history.warn(f"usage limit reached ({limit.source}); waiting until {until.isoformat()}")
    status = str(LoopStatus.RATE_LIMITED)
    history.publish(
        EventType.WAITING, {"until": until.isoformat(), "reason": reason, "status": status}
    )
    signal: ExternalSignal | None = None
    try:
        while signal is None and not interrupt.is_set():
            left = limit.resets_at - time.time()
            if left <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(interrupt.wait(), min(left, WAIT_POLL_S))
            signal = None if interrupt.is_set() else external()
    finally:
        _set_status(history, LoopStatus.RUNNING, None, None)
    return signal


def _set_status(
    history: History, status: LoopStatus, until: datetime | None, detail: str | None
) -> None:
    transition(history.loop.status, status)
    history.save_loop(
        replace(history.loop, status=status, rate_limited_until=until, stop_detail=detail)
    )
    history.write_state()
