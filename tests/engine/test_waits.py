"""Waits that end when their event is set, or on time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any

import pytest

from ralphctl.engine import waits
from ralphctl.engine.waits import wait_set


def test_a_set_event_ends_the_wait_at_once():
    async def set_soon() -> bool:
        event = asyncio.Event()
        asyncio.get_running_loop().call_later(0.01, event.set)
        return await wait_set(event, 60)

    started = time.monotonic()
    assert asyncio.run(set_soon()) is True
    assert time.monotonic() - started < 30


def test_an_unset_event_waits_its_whole_time():
    started = time.monotonic()
    assert asyncio.run(wait_set(asyncio.Event(), 0.2)) is False
    assert time.monotonic() - started >= 0.2


def test_a_long_wait_is_cut_so_that_the_slack_linux_gives_poll_timeouts_cannot_make_it_late(
    monkeypatch: pytest.MonkeyPatch,
):
    clock = [1000.0]
    asked: list[float] = []

    async def late_timeout(waiting: Coroutine[Any, Any, Any], timeout: float) -> None:
        waiting.close()
        asked.append(timeout)
        clock[0] += timeout * 1.001  # as late as the kernel lets an epoll timeout fire
        raise TimeoutError

    async def five_seconds() -> bool:
        with monkeypatch.context() as patched:  # only while the wait runs, not the event loop
            patched.setattr(time, "monotonic", lambda: clock[0])
            patched.setattr(asyncio, "wait_for", late_timeout)
            return await wait_set(asyncio.Event(), 5.0)

    assert asyncio.run(five_seconds()) is False

    assert asked[0] == pytest.approx(4.99)
    assert len(asked) == 2
    assert asked[1] <= waits.ONE_STEP_S
    assert 0 <= clock[0] - 1005.0 < 0.0001  # one 5 s step would have ended 5 ms late
