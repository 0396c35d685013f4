"""Managers over a fresh SQLite store, running loops of the scripted agent (real processes)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ralphctl.engine.bus import Subscription
from ralphctl.engine.starting import LoopRequest
from ralphctl.store.records import EventRecord
from ralphctl.store.repository import Store

FAST = {"cooldown": 0, "checkpoint_interval": 0, "error_backoff_cap": 0}
DONE = {"text": "All done.\n<promise>COMPLETE</promise>", "cost_usd": 0.01}
SLOW = {"text": "working slowly", "sleep_s": 30, "cost_usd": 0.5}
WAIT_S = 60.0

T = TypeVar("T")


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "no-user-config.toml"))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Store]:
    with Store.open(str(tmp_path / "ralphctl.db")) as store:
        yield store


@pytest.fixture
def new_workdir(tmp_path: Path) -> Callable[[], Path]:
    def make() -> Path:
        path = tmp_path / f"work-{uuid.uuid4().hex[:6]}"
        path.mkdir()
        return path

    return make


def spec(
    workdir: Path, *steps: dict[str, Any], worktree: bool = False, **settings: Any
) -> LoopRequest:
    """A loop of the scripted agent playing ``steps`` (the last one repeats)."""
    script = workdir.parent / f"script-{uuid.uuid4().hex[:6]}.json"
    script.write_text(json.dumps({"steps": list(steps)}))
    given = {**FAST, **settings, "agent": "scripted", "script": str(script)}
    return LoopRequest(task="Do the work.", workdir=workdir, settings=given, worktree=worktree)


def run(coroutine: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, 120)

    return asyncio.run(bounded())


async def next_event(
    subscription: Subscription, event_type: str, loop_id: str | None = None
) -> EventRecord:
    """The next event of this type (of this loop), skipping others; fails after WAIT_S."""

    async def find() -> EventRecord:
        async for event in subscription:
            if event.event_type == event_type and loop_id in (None, event.loop_id):
                return event
        raise AssertionError(f"the subscription ended before a {event_type} event")

    return await asyncio.wait_for(find(), WAIT_S)


async def until(condition: Callable[[], bool]) -> None:
    """Wait until ``condition()`` holds; fails after WAIT_S."""

    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), WAIT_S)
