"""Waiting for an event, or for a while, and ending on time.

asyncio waits in ``epoll_wait``, and Linux lets a poll timeout fire late by up to 0.1 % of it
(the slack it gives select, poll and epoll timeouts): a 5 s cooldown ended about 5 ms late,
while ``sleep 5`` in a shell (a timer, 50 µs of slack) does not. A long wait is therefore cut
in two: all but a five-hundredth of it, then the rest, whose own slack is a few microseconds.
"""

from __future__ import annotations

import asyncio
import time

#: Waits at most this long are made in one step (their slack is at most 50 µs).
ONE_STEP_S = 0.05


async def wait_set(event: asyncio.Event, seconds: float) -> bool:
    """Wait until ``event`` is set (True) or ``seconds`` have passed (False)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        step = left if left <= ONE_STEP_S else left - left / 500
        try:
            await asyncio.wait_for(event.wait(), step)
        except TimeoutError:
            continue
        return True
    return False
