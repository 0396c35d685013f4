"""Calls per hour: how long to wait before the next agent call, per loop and across loops.

Every iteration is one agent call; its start time, as stored, is what counts. A call that
started exactly ``window_s`` ago has left the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ralphctl.store.repository import Store

HOUR_S = 3600.0


def next_allowed(
    starts: Sequence[datetime], limit: int | None, now: datetime, window_s: float = HOUR_S
) -> datetime | None:
    """None when a call may start now; else the moment enough calls have left the window."""
    if limit is None:
        return None
    if limit < 1:
        raise ValueError(f"a calls-per-hour limit must be at least 1, not {limit}")
    inside = _in_window(starts, now, window_s)
    if len(inside) < limit:
        return None
    return inside[len(inside) - limit] + timedelta(seconds=window_s)


def calls_wait(
    store: Store,
    loop_id: str,
    *,
    per_loop: int | None,
    global_: int | None,
    now: datetime,
    window_s: float = HOUR_S,
) -> tuple[datetime, str] | None:
    """When the next call of ``loop_id`` may start and why; None when it may start now.

    ``global_`` counts the calls of every loop in the database. When both limits are
    reached, the later moment wins.
    """
    since = now - timedelta(seconds=window_s)
    waits = []
    for limit, loop, scope in ((per_loop, loop_id, "per loop"), (global_, None, "across loops")):
        if limit is None:
            continue
        starts = store.iteration_starts_since(since, loop)
        until = next_allowed(starts, limit, now, window_s)
        if until is not None:
            count = len(_in_window(starts, now, window_s))
            reason = f"{count} agent calls in the last {_window(window_s)} (limit {limit} {scope})"
            waits.append((until, reason))
    return max(waits, key=lambda wait: wait[0], default=None)


def _in_window(starts: Sequence[datetime], now: datetime, window_s: float) -> list[datetime]:
    """The starts less than ``window_s`` before ``now``, oldest first."""
    since = now - timedelta(seconds=window_s)
    return sorted(start for start in starts if start > since)


def _window(window_s: float) -> str:
    return "hour" if window_s == HOUR_S else f"{window_s:g}s"
