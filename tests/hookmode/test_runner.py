"""The hook-mode runner in situations the real CLI cannot be made to produce on demand, with a
scripted stand-in for ``claude`` (``fake_claude.py``) that runs the injected Stop hook."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.claude import ClaudeAdapter
from ralphctl.domain.config import LoopConfig
from ralphctl.engine.hookmode.managed import session_of
from ralphctl.engine.hookmode.runner import HookLoopRunner
from ralphctl.engine.hookmode.server import StopRequest
from ralphctl.engine.hookmode.setup import prepare
from ralphctl.engine.hookmode.stops import DECIDED_ALONE
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.tracker import load
from ralphctl.store.records import IterationRecord, LoopRecord
from ralphctl.store.repository import Store
from tests.hook.helpers import stop_event

FAKE = Path(__file__).with_name("fake_claude.py")
DONE = "All done.\n<promise>COMPLETE</promise>"


class Loop:
    """A finished hook-mode loop and what it left behind."""

    def __init__(self, record: LoopRecord, store: Store, tracker: str) -> None:
        self.record = record
        self.iterations: list[IterationRecord] = store.iterations(record.id)
        self.events = [(e.event_type, e.data) for e in store.events_since(0, record.id)]
        self.errors = store.errors(record.id)
        loaded = load(tracker)
        assert loaded is not None
        self.tracker: dict[str, Scalar] = loaded.fields

    @property
    def outcome(self) -> tuple[str, str | None]:
        return str(self.record.status), self.record.stop_reason and str(self.record.stop_reason)

    def statuses(self) -> list[tuple[int, str, str]]:
        return [(it.n, it.status, it.output_summary) for it in self.iterations]

    def warnings(self) -> list[str]:
        return [data["message"] for kind, data in self.events if kind == "warning"]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(str(tmp_path / "ralphctl.db"))


@pytest.fixture
def play(tmp_path: Path, workdir: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``play(runs, **config)`` runs a loop against the stand-in playing ``runs``."""
    wrapper = tmp_path / "claude"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    wrapper.chmod(0o755)
    script = tmp_path / "script.json"
    monkeypatch.setenv("RALPHCTL_CLAUDE_BIN", str(wrapper))
    monkeypatch.setenv("FAKE_CLAUDE_SCRIPT", str(script))
    monkeypatch.delenv("RALPHCTL_HOOK_SOCKET", raising=False)

    def play(runs: list[list[dict[str, Any]]], before: Any = None, **settings: Any) -> Loop:
        script.write_text(json.dumps(runs))
        config = LoopConfig(error_backoff_cap=0, **settings)
        adapter = ClaudeAdapter()
        ready = prepare(store, adapter, "Do the task", workdir, config, name="test")
        if before is not None:
            before()
        runner = HookLoopRunner(store, adapter, ready.loop, config, ready.session)
        final = asyncio.run(runner.run())
        return Loop(final, store, ready.session.tracker)

    return play


def test_each_stop_is_an_iteration_and_the_bound_ends_the_loop(play):
    loop = play([[{"text": "one"}, {"text": "two"}, {"text": "three"}]], max_iterations=3)
    assert loop.outcome == ("stopped", "max_iterations")
    assert loop.statuses() == [(1, "ok", "one"), (2, "ok", "two"), (3, "ok", "three")]
    assert loop.record.cost_usd == pytest.approx(0.018)
    assert loop.tracker["cost_usd"] == pytest.approx(3 * 0.004, rel=0.05)  # the live estimate


def test_a_stop_the_hook_decided_alone_is_recorded_when_the_runner_sees_the_next(play):
    loop = play(
        [[{"text": "one"}, {"text": "two", "alone": True}, {"text": "three"}]], max_iterations=3
    )
    assert loop.statuses() == [(1, "ok", "one"), (2, "ok", DECIDED_ALONE), (3, "ok", "three")]
    assert loop.outcome == ("stopped", "max_iterations")


def test_a_loop_the_hook_ended_alone_ends_with_its_reason(play):
    loop = play([[{"text": "one"}, {"text": DONE, "alone": True}]], max_iterations=5)
    assert loop.outcome == ("completed", "completion")
    assert loop.statuses() == [(1, "ok", "one"), (2, "ok", DECIDED_ALONE)]


def test_the_same_stop_from_two_copies_of_the_hook_counts_once(play):
    runs = [[{"text": "one", "twice": True}, {"text": "two", "twice": True}, {"text": "three"}]]
    loop = play(runs, max_iterations=3)
    assert [n for n, _, _ in loop.statuses()] == [1, 2, 3]
    assert loop.tracker["iteration"] == 3


def test_a_session_claude_code_ended_after_a_block_is_resumed_not_taken_for_done(play):
    loop = play([[{"text": "one"}, {"text": "two"}], [{"text": "three"}]], max_iterations=3)
    assert loop.outcome == ("stopped", "max_iterations")
    assert loop.statuses() == [(1, "ok", "one"), (2, "ok", "two"), (3, "ok", "three")]
    [warning] = loop.warnings()
    assert "ended the session itself after a block" in warning
    assert "not a completion" in warning
    assert loop.tracker["cap_overrides"] == 1
    assert loop.record.cost_usd == pytest.approx(0.018)  # each run's own totals, added


def test_an_api_error_is_an_error_iteration_and_the_session_goes_on(play):
    loop = play([[{"text": "one"}, {"error": True}], [{"text": DONE}]], max_iterations=5)
    assert loop.outcome == ("completed", "completion")
    assert [(n, status) for n, status, _ in loop.statuses()] == [(1, "ok"), (2, "error"), (3, "ok")]
    assert "529" in (loop.iterations[1].error_message or "")
    assert len(loop.errors) == 1


def test_consecutive_failed_sessions_trip_the_circuit_breaker(play):
    loop = play([[{"error": True}]] * 3, max_iterations=10, circuit_breaker_threshold=3)
    assert loop.outcome == ("failed", "circuit_breaker")
    assert [status for _, status, _ in loop.statuses()] == ["error"] * 3
    assert (loop.tracker["active"], loop.tracker["ended_reason"]) == (False, "circuit_breaker")


def test_a_stop_request_ends_the_loop_at_the_next_stop(play, workdir):
    def request_stop() -> None:
        (workdir / ".ralph" / "stop").touch()

    loop = play([[{"text": "one"}, {"text": "two"}]], before=request_stop, max_iterations=5)
    assert loop.outcome == ("stopped", "user_stop")
    assert loop.statuses() == [(1, "ok", "one")]
    assert (loop.tracker["active"], loop.tracker["ended_reason"]) == (False, "user_stop")


def test_a_pause_request_ends_the_turn_and_a_new_runner_continues_the_session(play, workdir, store):
    def request_pause() -> None:
        (workdir / ".ralph" / "pause").touch()

    runs = [[{"text": "one"}, {"text": "not played"}], [{"text": "two"}, {"text": DONE}]]
    paused = play(runs, before=request_pause, max_iterations=5)
    assert paused.outcome == ("paused", None)
    assert paused.statuses() == [(1, "ok", "one")]
    assert (paused.tracker["active"], paused.tracker["paused"]) == (False, True)
    assert paused.events[-1][0] == "paused"

    session = session_of(paused.record)
    assert session.resume
    runner = HookLoopRunner(store, ClaudeAdapter(), paused.record, LoopConfig(), session)
    final = Loop(asyncio.run(runner.run()), store, session.tracker)

    assert final.outcome == ("completed", "completion")
    assert final.statuses()[:2] == [(1, "ok", "one"), (2, "ok", "two")]
    assert final.record.cost_usd == pytest.approx(0.018)  # 0.006 + 0.012, each run its own
    assert [kind for kind, _ in final.events].count("resumed") == 1
    assert final.tracker["active"] is False


def test_ralphctl_resume_continues_a_paused_session_and_refuses_an_ended_one(
    play, workdir, store, tmp_path
):
    paused = play(
        [[{"text": "one"}], [{"text": DONE}]],
        before=(workdir / ".ralph" / "pause").touch,
        max_iterations=5,
    )
    env = {
        **os.environ,
        "RALPHCTL_DB": str(tmp_path / "ralphctl.db"),
        "RALPHCTL_CONFIG": str(tmp_path / "no-user-config.toml"),
    }
    resume = [sys.executable, "-m", "ralphctl", "resume", paused.record.id, "--json"]

    done, again = (
        subprocess.run(resume, env=env, capture_output=True, text=True, timeout=120, check=False)
        for _ in range(2)
    )

    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["iterations"]) == ("completed", 2)
    assert store.get_loop(paused.record.id).cost_usd == pytest.approx(0.012)
    assert again.returncode == 2
    assert "has completed" in again.stderr


def test_the_cost_budget_acts_at_a_stop_on_the_live_estimate(play):
    loop = play(
        [[{"text": f"turn {n}"} for n in range(1, 10)]], max_iterations=20, max_cost_usd=0.01
    )
    assert loop.outcome == ("stopped", "max_cost")
    assert len(loop.iterations) == 3  # about $0.004 a turn, live: over $0.01 at the third


def test_a_stop_of_another_session_is_left_to_its_own_hook(store, workdir):
    adapter, config = ClaudeAdapter(), LoopConfig()
    ready = prepare(store, adapter, "Do the task", workdir, config, name="test")
    runner = HookLoopRunner(store, adapter, ready.loop, config, ready.session)
    other = stop_event(session="0ther000-0000-4000-8000-000000000001")
    reply = runner.stops.on_stop(StopRequest([], None, time.monotonic() + 1, other))
    assert reply.decided is False
    tracker = load(ready.session.tracker)
    assert tracker is not None
    assert tracker.fields["iteration"] == 1
