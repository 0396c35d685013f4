"""The hook-mode runner in situations the real CLI cannot be made to produce on demand, with a
scripted stand-in for ``claude`` (``fake_claude.py``) that runs the injected Stop hook."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.claude import ClaudeAdapter
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.states import LoopStatus
from ralphctl.domain.steering import NO_HUMAN_NOTE
from ralphctl.engine.hookmode.answers import TIMED_OUT
from ralphctl.engine.hookmode.managed import session_of
from ralphctl.engine.hookmode.runner import HookLoopRunner
from ralphctl.engine.hookmode.server import StopRequest
from ralphctl.engine.hookmode.setup import HookModeError, prepare
from ralphctl.engine.hookmode.stops import DECIDED_ALONE
from ralphctl.engine.runner import Interruption, RunControl
from ralphctl.engine.steering import tell
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.tracker import load
from ralphctl.store.errors import StoreError
from ralphctl.store.records import IterationRecord, LoopRecord
from ralphctl.store.repository import Store
from ralphctl.store.transcript_chunks import iter_transcript
from tests.hook.helpers import stop_event
from tests.store.faults import fail_storing_events_of

FAKE = Path(__file__).with_name("fake_claude.py")
DONE = "All done.\n<promise>COMPLETE</promise>"


class Loop:
    """A finished hook-mode loop and what it left behind."""

    def __init__(
        self,
        record: LoopRecord,
        store: Store,
        tracker: str,
        answers: tuple[dict[str, Any], ...] = (),
    ) -> None:
        self.record = record
        self.answers = answers  # what the hook printed at each Stop, in order (``play``)
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
        printed = script.with_suffix(".answers")
        lines = printed.read_text().splitlines() if printed.exists() else []
        answers = tuple(json.loads(line) for line in lines)
        return Loop(final, store, ready.session.tracker, answers)

    return play


def test_each_stop_is_an_iteration_and_the_bound_ends_the_loop(play):
    loop = play([[{"text": "one"}, {"text": "two"}, {"text": "three"}]], max_iterations=3)
    assert loop.outcome == ("stopped", "max_iterations")
    assert loop.statuses() == [(1, "ok", "one"), (2, "ok", "two"), (3, "ok", "three")]
    assert loop.record.cost_usd == pytest.approx(0.018)
    assert loop.tracker["cost_usd"] == pytest.approx(3 * 0.004, rel=0.05)  # the live estimate


def test_a_loop_never_ends_without_its_end_events(play, store, monkeypatch):
    """A runner that dies while storing the end (here: the events fail to insert) leaves the
    loop running, never stopped with no ``stopped`` event."""
    fail_storing_events_of("stopped", monkeypatch)
    with pytest.raises(StoreError, match="disk I/O error"):
        play([[{"text": "one"}]], max_iterations=1)

    (loop,) = store.list_loops()
    assert loop.status is LoopStatus.RUNNING
    assert store.events_of(loop.id, ["state_changed", "stopped"]) == []


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


def test_a_queued_loop_whose_tracker_budget_was_corrupted_is_refused_naming_the_field(
    store, workdir
):
    ready = prepare(store, ClaudeAdapter(), "Do the task", workdir, LoopConfig(), name="test")
    tracker = Path(ready.session.tracker)
    lines = tracker.read_text().splitlines()
    kept = [line for line in lines if not line.startswith("max_cost_usd:")]
    tracker.write_text("\n".join([kept[0], "max_cost_usd: .nan", *kept[1:]]) + "\n")
    with pytest.raises(HookModeError, match="corrupt: max_cost_usd must be"):
        session_of(ready.loop)


def test_a_budget_corrupted_mid_loop_ends_the_loop_at_the_next_stop_never_runs_it_unbounded(
    play, workdir
):
    def corrupt_the_cost_budget() -> None:
        [tracker] = (workdir / ".ralph" / "sessions").glob("*/loop-tracker.md")
        lines = [x for x in tracker.read_text().splitlines() if not x.startswith("max_cost_usd:")]
        tracker.write_text("\n".join([lines[0], "max_cost_usd: .nan", *lines[1:]]) + "\n")

    turns = [{"text": f"Working ({n})."} for n in range(1, 6)]
    loop = play([turns] * 3, before=corrupt_the_cost_budget, max_iterations=5)
    assert loop.answers == ({},)  # the first Stop is allowed, and the session not resumed
    assert (loop.tracker["active"], loop.tracker["ended_reason"]) == (False, "corrupt")
    assert str(loop.tracker["problem"]).startswith("max_cost_usd must be")
    assert loop.outcome == ("failed", "circuit_breaker")
    assert "corrupt (max_cost_usd must be" in (loop.record.stop_detail or "")


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


def test_a_usage_limit_parks_the_loop_and_the_session_goes_on_after_the_reset(play):
    runs = [[{"text": "one"}, {"usage_limited": 1}], [{"text": DONE}]]
    loop = play(runs, max_iterations=5, circuit_breaker_threshold=1)
    assert loop.outcome == ("completed", "completion")
    assert [(n, status) for n, status, _ in loop.statuses()] == [
        (1, "ok"),
        (2, "rate_limited"),
        (3, "ok"),
    ]
    assert (loop.record.consecutive_errors, loop.record.rate_limited_until) == (0, None)
    assert loop.errors == []  # a limit is no error
    [waiting] = [data for kind, data in loop.events if kind == "waiting"]
    assert (waiting["status"], waiting["reason"]) == ("rate_limited", "usage limit (http_429)")
    assert any("usage limit reached" in warning for warning in loop.warnings())


def later(seconds: float, action: Any) -> None:
    threading.Timer(seconds, action).start()


@pytest.mark.parametrize(
    ("request_file", "outcome", "tracker"),
    [
        ("stop", ("stopped", "user_stop"), {"active": False, "ended_reason": "user_stop"}),
        ("pause", ("paused", None), {"active": False, "paused": True}),
    ],
)
def test_a_stop_or_pause_request_ends_a_usage_limit_wait(
    play, workdir, request_file, outcome, tracker
):
    requested = workdir / ".ralph" / request_file
    started = time.monotonic()
    loop = play(
        [[{"usage_limited": 60}]],
        before=lambda: later(0.5, requested.touch),
        max_iterations=5,
    )
    assert time.monotonic() - started < 30
    assert loop.outcome == outcome
    assert [(n, status) for n, status, _ in loop.statuses()] == [(1, "rate_limited")]
    assert {key: loop.tracker.get(key) for key in tracker} == tracker
    assert loop.record.rate_limited_until is None


def test_iterations_that_change_nothing_in_a_git_work_tree_trip_the_breaker(play, workdir):
    subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    turns = [{"text": f"Thinking ({n}).", "sleep_s": 0.2} for n in range(1, 9)]
    loop = play([turns], max_iterations=10, no_progress_threshold=3)
    assert loop.outcome == ("failed", "circuit_breaker")
    assert "no progress" in (loop.record.stop_detail or "")
    # judged once its Stop is answered: the trip ends the loop at the next Stop
    assert len(loop.iterations) == 4
    [tripped] = [data for kind, data in loop.events if kind == "circuit_breaker_tripped"]
    assert (tripped["iteration"], tripped["cause"]) == (3, "no_progress")
    assert (loop.tracker["active"], loop.tracker["ended_reason"]) == (False, "circuit_breaker")
    assert loop.record.breaker_state["status"] == "open"


PYTEST = {"name": "Bash", "input": {"command": "pytest -q", "description": "Run the tests"}}
READ = {"name": "Read", "input": {"file_path": "notes.txt"}}
EDIT = {"name": "Edit", "input": {"file_path": "notes.txt", "old_string": "a", "new_string": "b"}}
DENIED_WRITE = {
    "name": "Write",
    "input": {"file_path": "notes.txt", "content": "x"},
    "denied": True,
}
TEST_ONLY_NOTE = "The last iteration only ran tests and changed nothing"


def test_outside_a_git_work_tree_file_editing_tool_calls_are_progress(play):
    turns = [{"text": f"Edited ({n}).", "tools": [READ, EDIT]} for n in range(1, 6)]
    loop = play([turns], max_iterations=5, no_progress_threshold=2)
    assert loop.outcome == ("stopped", "max_iterations")


def test_outside_a_git_work_tree_iterations_that_edit_nothing_trip_the_breaker(play):
    turns = [{"text": f"Read it ({n}).", "tools": [READ]} for n in range(1, 6)]
    loop = play([turns], max_iterations=5, no_progress_threshold=2)
    assert loop.outcome == ("failed", "circuit_breaker")
    [tripped] = [data for kind, data in loop.events if kind == "circuit_breaker_tripped"]
    assert (tripped["iteration"], tripped["cause"]) == (2, "no_progress")


def test_outside_a_git_work_tree_refused_edits_trip_the_breaker_by_the_denial_threshold(play):
    turns = [{"text": f"Could not write ({n}).", "tools": [DENIED_WRITE]} for n in range(1, 6)]
    loop = play([turns], max_iterations=5, no_progress_threshold=10, permission_denial_threshold=2)
    assert loop.outcome == ("failed", "circuit_breaker")
    assert "permission denied for Write" in (loop.record.stop_detail or "")
    first_block = loop.answers[0]["reason"]
    assert "These tools were denied in the last iteration" in first_block


def test_an_iteration_that_only_ran_tests_is_told_so_at_its_stop(play):
    turns = [
        {"text": "The tests pass.", "tools": [PYTEST]},
        {"text": "Fixed the next bug.", "tools": [PYTEST, EDIT]},
        {"text": DONE},
    ]
    loop = play([turns], max_iterations=5)
    assert loop.outcome == ("completed", "completion")
    reasons = [answer.get("reason", "") for answer in loop.answers]
    assert TEST_ONLY_NOTE in reasons[0]
    assert TEST_ONLY_NOTE not in reasons[1]  # the edit was the next change


def test_the_same_error_again_and_again_trips_the_breaker_by_its_own_threshold(play):
    loop = play(
        [[{"error": True}]] * 4,
        max_iterations=10,
        circuit_breaker_threshold=10,
        same_error_threshold=2,
    )
    assert loop.outcome == ("failed", "circuit_breaker")
    assert [status for _, status, _ in loop.statuses()] == ["error", "error"]
    assert "same error" in (loop.record.stop_detail or "")


def test_a_temperature_claude_cannot_take_is_a_warning_naming_the_agent(play):
    loop = play([[{"text": "one"}]], max_iterations=1, temperature=0.2)
    assert "temperature is ignored: the claude agent has no temperature setting" in (
        loop.warnings()
    )


def test_a_session_s_output_is_kept_in_the_transcripts_of_the_iterations_it_spans(play, store):
    loop = play([[{"text": "one"}, {"text": "two"}], [{"text": "three"}]], max_iterations=3)

    kept = {n: b"".join(iter_transcript(store, loop.record.id, n)) for n in (1, 2, 3)}
    assert b'"text": "one"' in kept[1] + kept[2]
    assert b'"text": "three"' in kept[3]  # the second claude process, after the first's output
    everything = b"".join(kept.values())
    assert everything.count(b'"type": "result"') == 2  # both runs, whole
    assert everything.index(b'"text": "one"') < everything.index(b'"text": "two"')


def test_a_runner_shut_down_while_parked_leaves_the_loop_paused_and_the_next_one_goes_on(
    play, store, workdir
):
    Path(os.environ["FAKE_CLAUDE_SCRIPT"]).write_text(
        json.dumps([[{"usage_limited": 60}], [{"text": DONE}]])
    )
    adapter, config, control = ClaudeAdapter(), LoopConfig(error_backoff_cap=0), RunControl()
    ready = prepare(store, adapter, "Do the task", workdir, config, name="test")

    async def shut_down_once_parked() -> None:
        while store.get_loop(ready.loop.id).status != "rate_limited":
            await asyncio.sleep(0.05)
        control.request(Interruption.SUSPEND)

    async def run_until_shut_down() -> LoopRecord:
        runner = HookLoopRunner(store, adapter, ready.loop, config, ready.session, control=control)
        shutdown = asyncio.create_task(shut_down_once_parked())
        try:
            return await runner.run()
        finally:
            shutdown.cancel()

    paused = asyncio.run(asyncio.wait_for(run_until_shut_down(), 30))
    assert (paused.status, paused.rate_limited_until) == ("paused", None)
    session = session_of(paused)
    runner = HookLoopRunner(store, adapter, paused, config, session)
    final = Loop(asyncio.run(runner.run()), store, session.tracker)
    assert final.outcome == ("completed", "completion")
    assert [(n, status) for n, status, _ in final.statuses()] == [(1, "rate_limited"), (2, "ok")]


def test_a_runtime_budget_that_runs_out_during_a_usage_limit_wait_ends_the_loop_after_it(play):
    loop = play([[{"usage_limited": 2}], [{"text": "not played"}]], max_runtime=1.5)
    assert loop.outcome == ("stopped", "max_runtime")
    assert [(n, status) for n, status, _ in loop.statuses()] == [(1, "rate_limited")]


def budget_warnings(loop: Loop) -> list[tuple[str, int]]:
    return [
        (data["budget"], data["iteration"])
        for kind, data in loop.events
        if kind == "budget_warning"
    ]


def test_a_budget_80_percent_spent_is_warned_of_once(play):
    turns = [{"text": f"turn {n}"} for n in range(1, 6)]
    loop = play([turns], max_iterations=5, max_cost_usd=1.0, no_progress_threshold=10)
    assert loop.outcome == ("stopped", "max_iterations")
    assert budget_warnings(loop) == [("iterations", 4)]  # $0.03 of $1: no cost warning


def test_a_paused_loop_s_next_runner_does_not_warn_again(play, workdir, store):
    budgets: dict[str, Any] = {"max_iterations": 5, "max_cost_usd": 0.007}  # a turn: $0.006
    runs = [[{"text": "one"}, {"text": "not played"}], [{"text": "two"}, {"text": "three"}]]
    paused = play(runs, before=(workdir / ".ralph" / "pause").touch, **budgets)
    assert paused.outcome == ("paused", None)
    assert budget_warnings(paused) == [("cost", 1)]  # once the run's reported cost settles

    session = session_of(paused.record)
    runner = HookLoopRunner(store, ClaudeAdapter(), paused.record, LoopConfig(**budgets), session)
    final = Loop(asyncio.run(runner.run()), store, session.tracker)

    assert final.outcome == ("stopped", "max_cost")
    assert budget_warnings(final) == [("cost", 1)]


QUESTION = "Which database should I use, Postgres or SQLite?"


def once_waiting(db: Path, action: Any) -> None:
    """Run ``action(store, loop)`` from another thread once the loop waits for an answer."""

    def watch() -> None:
        with Store.open(str(db)) as store:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                [loop] = store.list_loops()
                if loop.status == "paused" and "for an answer" in (loop.stop_detail or ""):
                    action(store, loop)
                    return
                time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()


def prompts(tmp_path: Path) -> list[str]:
    lines = (tmp_path / "script.prompts").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_a_question_waits_for_the_answer_and_the_same_session_goes_on_with_it(play, tmp_path):
    runs = [[{"text": QUESTION}, {"text": "not played"}], [{"text": DONE}]]
    answer = lambda store, loop: tell(store, loop, "SQLite, please.", "test")  # noqa: E731

    loop = play(
        runs,
        before=lambda: once_waiting(tmp_path / "ralphctl.db", answer),
        on_question="wait",
        max_iterations=5,
    )

    assert loop.outcome == ("completed", "completion")
    assert [(n, status) for n, status, _ in loop.statuses()] == [(1, "ok"), (2, "ok")]
    assert loop.answers[0] == {
        "systemMessage": "Ralph loop waiting for an answer to its question at iteration 1."
    }
    [asked] = [data for kind, data in loop.events if kind == "question"]
    assert asked == {"iteration": 1, "question": QUESTION, "on_question": "wait"}
    [waiting] = [data for kind, data in loop.events if kind == "waiting"]
    assert (waiting["reason"], waiting["status"], waiting["question"]) == (
        "question",
        "paused",
        QUESTION,
    )
    _, resumed = prompts(tmp_path)
    assert "- SQLite, please." in resumed
    assert NO_HUMAN_NOTE not in resumed
    [started] = [data for kind, data in loop.events if kind == "iteration_started"][1:]
    assert (started["iteration"], len(started["messages"])) == (2, 1)  # delivered: not pending


def test_a_question_nobody_answers_in_time_goes_on_with_the_safe_default_note(play, tmp_path):
    runs = [[{"text": QUESTION}], [{"text": DONE}]]
    loop = play(runs, on_question="wait", question_timeout=0.3, max_iterations=5)
    assert loop.outcome == ("completed", "completion")
    assert [n for n, _, _ in loop.statuses()] == [1, 2]
    assert TIMED_OUT in loop.warnings()
    assert NO_HUMAN_NOTE in prompts(tmp_path)[1]


def test_a_stop_request_ends_the_wait_for_an_answer_and_the_loop(play, tmp_path, workdir):
    def request_stop(store: Store, loop: LoopRecord) -> None:
        (workdir / ".ralph" / "stop").touch()

    loop = play(
        [[{"text": QUESTION}], [{"text": "not played"}]],
        before=lambda: once_waiting(tmp_path / "ralphctl.db", request_stop),
        on_question="wait",
        max_iterations=5,
    )
    assert loop.outcome == ("stopped", "user_stop")
    assert loop.statuses() == [(1, "ok", QUESTION)]
    assert (loop.tracker["active"], loop.tracker["ended_reason"]) == (False, "user_stop")
    assert loop.tracker["paused"] is False
