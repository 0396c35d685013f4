"""The runner decides each agent's forwarded Stop as that agent's own hook would: read with
the agent's input reader (its ``--format``), answered in the agent's output shape, including
the answers the runner writes itself (a stop request, a pause, a question it waits on).
Inputs are the recorded ones of tests/hook/agent_inputs.py."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.claude import ClaudeAdapter
from ralphctl.domain.conditions import ExternalSignal
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.steering import NO_HUMAN_NOTE
from ralphctl.engine.hookmode.runner import HookLoopRunner
from ralphctl.engine.hookmode.server import Reply, StopRequest
from ralphctl.engine.hookmode.setup import prepare
from ralphctl.hook.tracker import load
from ralphctl.store.repository import Store
from tests.hook.agent_inputs import AGENTS, INSTRUCTION_FIELD, agent_stop, cursor_transcript

#: The agents whose CLI shows the user a ``systemMessage`` (the others get no output).
SHOWS_MESSAGES = ("claude", "codex", "gemini")
QUESTION = "Which database should I use, Postgres or SQLite?"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(str(tmp_path / "ralphctl.db"))


def runner_for(
    store: Store,
    workdir: Path,
    config: LoopConfig | None = None,
    external: Callable[[], ExternalSignal | None] | None = None,
) -> HookLoopRunner:
    adapter, config = ClaudeAdapter(), config or LoopConfig()
    ready = prepare(store, adapter, "Do the task", workdir, config, name="test")
    return HookLoopRunner(
        store, adapter, ready.loop, config, ready.session, external=external or (lambda: None)
    )


def forwarded(runner: HookLoopRunner, agent: str, raw: bytes) -> Reply:
    """One Stop of ``agent``'s hook (``--format agent``), decided and then recorded as the
    runner does it."""
    request = StopRequest(["--format", agent], None, time.monotonic() + 1, raw)

    async def decide() -> Reply:
        reply = runner.stops.on_stop(request)
        if reply.then is not None:
            reply.then()
        await runner.history.flush()
        return reply

    return asyncio.run(decide())


def stop_of(runner: HookLoopRunner, agent: str, workdir: Path, **extra: Any) -> bytes:
    return agent_stop(agent, workdir, session=runner.session.session_id, **extra)


@pytest.mark.parametrize("agent", AGENTS)
def test_each_agents_stop_is_read_with_its_own_reader_and_blocked_in_its_own_shape(
    agent, store, workdir
):
    runner = runner_for(store, workdir)

    reply = forwarded(runner, agent, stop_of(runner, agent, workdir))

    assert reply.decided
    answer = json.loads(reply.line or "")
    assert "Ralph iteration 2" in answer[INSTRUCTION_FIELD[agent]]
    tracker = load(runner.tracker.path)
    assert tracker is not None
    assert tracker.fields["iteration"] == 2


@pytest.mark.parametrize("agent", AGENTS)
def test_a_stop_request_ends_the_loop_in_the_agents_output_shape(agent, store, workdir):
    runner = runner_for(store, workdir, external=lambda: ExternalSignal.STOP)

    reply = forwarded(runner, agent, stop_of(runner, agent, workdir))

    assert reply.decided
    if agent in SHOWS_MESSAGES:
        message = "Ralph loop stopped at iteration 1: stop requested."
        assert json.loads(reply.line or "") == {"systemMessage": message}
    else:  # Copilot and Cursor show hooks' messages to nobody: an allowed stop prints nothing
        assert reply.line is None
    tracker = load(runner.tracker.path)
    assert tracker is not None
    assert tracker.fields["active"] is False


@pytest.mark.parametrize("agent", AGENTS)
def test_a_pause_ends_the_turn_in_the_agents_output_shape(agent, store, workdir):
    runner = runner_for(store, workdir, external=lambda: ExternalSignal.PAUSE)

    reply = forwarded(runner, agent, stop_of(runner, agent, workdir))

    expected = {"systemMessage": "Ralph loop paused at iteration 1."}
    assert (json.loads(reply.line) if reply.line else None) == (
        expected if agent in SHOWS_MESSAGES else None
    )
    assert runner.stops.paused


def test_a_cursor_question_read_from_its_transcript_waits_for_the_user(store, workdir, tmp_path):
    transcript = cursor_transcript(tmp_path / "cursor.jsonl", QUESTION)
    runner = runner_for(store, workdir, LoopConfig(on_question="wait"))

    reply = forwarded(runner, "cursor", stop_of(runner, "cursor", workdir, transcript=transcript))

    assert reply.line is None  # the turn ends; the runner waits for the answer
    assert runner.stops.asked is not None
    assert runner.stops.asked.question == QUESTION


def test_a_cursor_follow_up_carries_the_notes_of_its_transcripts_last_text(
    store, workdir, tmp_path
):
    transcript = cursor_transcript(tmp_path / "cursor.jsonl", QUESTION)
    runner = runner_for(store, workdir)

    reply = forwarded(runner, "cursor", stop_of(runner, "cursor", workdir, transcript=transcript))

    assert json.loads(reply.line or "")["followup_message"].endswith(NO_HUMAN_NOTE)


def test_a_gemini_iteration_records_the_last_reply_of_its_transcript(store, workdir, tmp_path):
    transcript = tmp_path / "session-2026-11-28T12-29-5e55a1d0.jsonl"
    replies = [{"id": f"g{n}", "type": "gemini", "content": f"Working ({n})."} for n in (1, 2)]
    transcript.write_text("".join(json.dumps(reply) + "\n" for reply in replies))
    runner = runner_for(store, workdir)
    # AfterAgent's prompt_response holds every reply since the process started
    raw = stop_of(runner, "gemini", workdir, text="Working (1).Working (2).", transcript=transcript)

    forwarded(runner, "gemini", raw)

    first = store.iterations(runner.loop.id)[0]  # the second one has begun
    assert first.output_summary == "Working (2)."


def test_a_hook_with_arguments_we_do_not_know_is_read_as_claude_codes(store, workdir):
    runner = runner_for(store, workdir)
    raw = stop_of(runner, "claude", workdir)
    request = StopRequest(["--format", "nonsense"], None, time.monotonic() + 1, raw)

    reply = runner.stops.on_stop(request)

    assert reply.decided
    assert reply.line is None  # the hook's own decision fails open on an unknown format
