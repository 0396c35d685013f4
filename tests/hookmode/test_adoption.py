"""A hook-mode loop of an agent that names its sessions itself (Codex): the runner adopts the
id the agent gives, from its stream's ``SessionStarted`` or from the first Stop forwarded on
the loop's own socket, moving the tracker under it. The real Codex CLI does the same end to
end in tests/agents/codex/test_codex_hook_mode.py."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from ralphctl.agents.claude import ClaudeAdapter
from ralphctl.agents.codex import CodexAdapter
from ralphctl.agents.events import SessionStarted
from ralphctl.domain.config import LoopConfig
from ralphctl.engine.hookmode.adoption import AdoptionError, move_session
from ralphctl.engine.hookmode.runner import HookLoopRunner, capped_message
from ralphctl.engine.hookmode.server import StopRequest
from ralphctl.engine.hookmode.setup import prepare
from ralphctl.hook.inbox import inbox_path, post
from ralphctl.hook.paths import tracker_path
from ralphctl.hook.tracker import load
from ralphctl.store.repository import Store
from tests.hook.helpers import stop_event

T = TypeVar("T")
THREAD = "01a20a81-3a63-70b3-921e-0983bf039233"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(str(tmp_path / "ralphctl.db"))


def codex_runner(store: Store, workdir: Path) -> HookLoopRunner:
    adapter, config = CodexAdapter(), LoopConfig()
    ready = prepare(store, adapter, "Do the task", workdir, config, name="test")
    return HookLoopRunner(store, adapter, ready.loop, config, ready.session)


def on_the_event_loop(runner: HookLoopRunner, action: Callable[[], T]) -> T:
    """``action`` as the runner does it (store writes are queued on the event loop), then
    every queued write done."""

    async def act() -> T:
        done = action()
        await runner.history.flush()
        return done

    return asyncio.run(act())


def stored_session(store: Store, runner: HookLoopRunner) -> str | None:
    return store.get_loop(runner.loop.id).agent_session_id


def test_moving_a_session_takes_its_tracker_and_inbox_under_the_new_id(workdir, store):
    runner = codex_runner(store, workdir)
    placeholder = runner.session.session_id
    post(runner.tracker.path, 1, "look at the tests")

    moved = move_session(str(workdir), runner.tracker.path, THREAD)

    assert moved == tracker_path(str(workdir), THREAD)
    tracker = load(moved)
    assert tracker is not None
    assert tracker.fields["session_id"] == THREAD
    assert os.path.exists(inbox_path(moved))
    assert not os.path.exists(os.path.dirname(tracker_path(str(workdir), placeholder)))


def test_an_unsafe_id_or_one_already_taken_is_refused(workdir, store):
    runner = codex_runner(store, workdir)
    with pytest.raises(AdoptionError, match="not a safe path component"):
        move_session(str(workdir), runner.tracker.path, "../elsewhere")
    os.makedirs(os.path.dirname(tracker_path(str(workdir), THREAD)))
    with pytest.raises(AdoptionError, match="another loop ran in that session"):
        move_session(str(workdir), runner.tracker.path, THREAD)
    assert load(runner.tracker.path) is not None  # left where it was


def test_the_streams_session_started_names_the_session(workdir, store):
    runner = codex_runner(store, workdir)

    on_the_event_loop(runner, lambda: runner._agent_event(SessionStarted(THREAD)))

    assert runner.session.session_id == THREAD
    assert runner.tracker.path == tracker_path(str(workdir), THREAD)
    assert runner.stops.session.session_id == THREAD
    assert stored_session(store, runner) == THREAD
    runner._agent_event(SessionStarted("0ther000-0000-4000-8000-000000000001"))
    assert runner.session.session_id == THREAD  # adopted once


def test_without_a_stream_event_the_first_stop_on_the_loops_socket_names_it(workdir, store):
    runner = codex_runner(store, workdir)

    request = StopRequest(["--format", "codex"], None, time.monotonic() + 1, stop_event(THREAD))
    reply = on_the_event_loop(runner, lambda: runner.stops.on_stop(request))

    assert reply.decided
    assert runner.session.session_id == THREAD
    assert stored_session(store, runner) == THREAD
    tracker = load(tracker_path(str(workdir), THREAD))
    assert tracker is not None
    assert tracker.fields["iteration"] == 2  # decided: blocked, the loop goes on


def test_an_agent_that_takes_the_given_id_adopts_nothing(workdir, store):
    adapter, config = ClaudeAdapter(), LoopConfig()
    ready = prepare(store, adapter, "Do the task", workdir, config, name="test")
    runner = HookLoopRunner(store, adapter, ready.loop, config, ready.session)

    runner._agent_event(SessionStarted(THREAD))

    assert runner.session.session_id == ready.session.session_id
    assert runner.stops.adopt is None


def test_the_session_ended_by_the_cli_is_told_per_agent():
    assert "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP" in capped_message("claude")
    assert capped_message("codex").startswith("Codex ended the session itself after a block")
    assert capped_message("gemini").startswith("the gemini CLI ended the session itself")
    assert all(
        m.endswith("not a completion; resuming the session")
        for m in [capped_message("claude"), capped_message("codex")]
    )


def test_an_inherited_session_id_of_the_hooks_environment_is_never_adopted(workdir, store):
    runner = codex_runner(store, workdir)
    placeholder = runner.session.session_id
    no_id = json.dumps({"hook_event_name": "Stop", "last_assistant_message": "Hi."}).encode()
    request = StopRequest([], "0uter000-0000-4000-8000-000000000001", time.monotonic() + 1, no_id)

    reply = on_the_event_loop(runner, lambda: runner.stops.on_stop(request))

    assert not reply.decided
    assert runner.session.session_id == placeholder
    assert runner.stops.adopt is not None  # still waiting for the agent's own id
