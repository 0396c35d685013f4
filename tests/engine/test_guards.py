"""The guards wired into the runner: breaker, analyzer notes, usage limits, calls per hour,
verification gates and estimated costs — end to end with the scripted agent."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.registry import adapter_for
from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.domain.steering import NO_HUMAN_NOTE
from ralphctl.engine.runner import LoopRunner
from ralphctl.store.records import LoopRecord
from ralphctl.store.repository import Store
from tests.engine.test_runner import DONE, Recorder, new_loop, run

EDIT = {"edits": [{"path": "progress.txt", "append": "x\n"}]}


def prompts(path: Path) -> list[str]:
    return [p.strip() for p in path.read_text().split("\x1e") if p.strip()]


def test_no_progress_trips_the_breaker_and_fails_the_loop(db: Store, workdir: Path):
    loop, config = new_loop(db, workdir, [{"text": "Thinking about it."}], no_progress_threshold=3)
    observer = Recorder()
    final = run(db, loop, config, observer=observer)
    assert final.status is LoopStatus.FAILED
    assert final.stop_reason is StopReason.CIRCUIT_BREAKER
    assert final.stop_reason.exit_code == 3
    assert final.iteration == 3
    assert "progress" in (final.stop_detail or "")
    assert "circuit_breaker_tripped" in observer.types()
    assert final.breaker_state is not None
    assert final.breaker_state["status"] == "open"


def test_progress_in_a_git_repo_keeps_the_breaker_closed(db: Store, workdir: Path):
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=workdir, check=True)
    steps: list[dict[str, Any]] = [
        {"text": f"step {n}", "bash": [f"echo {n} >> log.txt"]} for n in range(4)
    ]
    loop, config = new_loop(db, workdir, [*steps, {"text": DONE}], no_progress_threshold=2)
    final = run(db, loop, config)
    assert final.status is LoopStatus.COMPLETED
    assert [it.files_changed for it in db.iterations(loop.id)] == [1, 1, 1, 1, 0]


def test_consecutive_errors_fail_the_loop_with_their_context(db: Store, workdir: Path):
    error = {"is_error": True, "api_error_status": 529, "stderr": "overloaded"}
    loop, config = new_loop(db, workdir, [error], circuit_breaker_threshold=5)
    final = run(db, loop, config)
    assert (final.status, final.stop_reason) == (LoopStatus.FAILED, StopReason.CIRCUIT_BREAKER)
    assert final.iteration == 5
    errors = db.errors(loop.id)
    assert [e.context["retry"] for e in errors] == [1, 2, 3, 4, 5]
    assert all(e.error_type == "api_error_529" for e in errors)


def test_an_open_breaker_waits_out_its_cooldown_then_a_good_trial_closes_it(
    db: Store, workdir: Path
):
    steps: list[dict[str, Any]] = [
        {"text": "hmm"},
        {"text": "hmm"},
        {**EDIT, "text": "fixed"},
        {"text": DONE},
    ]
    loop, config = new_loop(
        db, workdir, steps, no_progress_threshold=2, auto_recover=True, breaker_cooldown=1
    )
    observer = Recorder()
    final = run(db, loop, config, observer=observer)
    assert final.status is LoopStatus.COMPLETED
    assert observer.types().count("circuit_breaker_tripped") == 1
    waits = [e.data for e in observer.events if e.event_type == "waiting"]
    assert len(waits) == 1
    assert "circuit breaker open" in waits[0]["reason"]
    history = [(t["from"], t["to"]) for t in (final.breaker_state or {})["history"]]
    assert history == [("closed", "open"), ("open", "half_open"), ("half_open", "closed")]


def test_resuming_a_tripped_loop_gives_it_one_trial(db: Store, workdir: Path):
    loop, config = new_loop(db, workdir, [{"text": "hmm"}], no_progress_threshold=2)
    tripped = run(db, loop, config)
    assert tripped.status is LoopStatus.FAILED
    script = Path(str(config.script))
    script.write_text(json.dumps({"steps": [{"text": "hmm"}, {"text": "hmm"}, {"text": DONE}]}))
    final = run(db, db.get_loop(loop.id), config)
    assert final.status is LoopStatus.COMPLETED
    assert final.iteration == 3


def test_a_usage_limit_parks_the_loop_until_the_reset_then_it_goes_on(db: Store, workdir: Path):
    limited = {
        "is_error": True,
        "api_error_status": 429,
        "error": "You've hit your limit",
        "rate_limit": {
            "status": "rejected",
            "resetsAt": int(time.time()) + 2,
            "rateLimitType": "five_hour",
        },
    }
    loop, config = new_loop(db, workdir, [limited, {"text": DONE}], circuit_breaker_threshold=1)
    observer = Recorder()
    statuses: list[LoopStatus] = []

    async def watch() -> LoopRecord:
        adapter = adapter_for("scripted", options={"script": str(config.script)})
        task = asyncio.create_task(LoopRunner(db, adapter, loop, config, observer=observer).run())
        while not task.done():
            statuses.append(db.get_loop(loop.id).status)
            await asyncio.sleep(0.1)
        return await task

    started = time.monotonic()
    final = asyncio.run(watch())
    assert final.status is LoopStatus.COMPLETED  # a usage limit is not an error
    assert time.monotonic() - started >= 1.0
    assert LoopStatus.RATE_LIMITED in statuses
    assert [it.status for it in db.iterations(loop.id)] == ["rate_limited", "ok"]
    assert final.consecutive_errors == 0
    waiting = next(e for e in observer.events if e.event_type == "waiting")
    assert waiting.data["status"] == "rate_limited"


def test_a_restart_while_rate_limited_keeps_waiting_until_the_reset(db: Store, workdir: Path):
    loop, config = new_loop(db, workdir, [{"text": DONE}])
    until = db.save_loop(
        replace(
            loop,
            status=LoopStatus.RATE_LIMITED,
            started_at=loop.created_at,
            rate_limited_until=loop.created_at.fromtimestamp(
                time.time() + 1.5, tz=loop.created_at.tzinfo
            ),
            stop_detail="usage limit (rate_limit_event)",
        )
    )
    started = time.monotonic()
    final = run(db, until, config)
    assert final.status is LoopStatus.COMPLETED
    assert time.monotonic() - started >= 1.0


def test_calls_per_hour_make_the_loop_wait(db: Store, workdir: Path, monkeypatch):
    loop, config = new_loop(
        db, workdir, [{"text": "work"}, {"text": "work"}, {"text": DONE}], max_calls_per_hour=2
    )
    monkeypatch.setattr(LoopRunner, "calls_window_s", 1.5)
    observer = Recorder()
    final = run(db, loop, config, observer=observer)
    assert final.status is LoopStatus.COMPLETED
    waits = [e.data for e in observer.events if e.event_type == "waiting"]
    assert len(waits) == 1
    assert waits[0]["status"] == "rate_limited"
    assert "limit 2 per loop" in waits[0]["reason"]


def test_a_question_to_the_absent_user_puts_the_no_human_note_in_the_next_prompt(
    db: Store, workdir: Path
):
    saved = workdir.parent / "prompts.txt"
    steps: list[dict[str, Any]] = [
        {"text": "Should I use PostgreSQL or SQLite for this?", "save_prompt": str(saved)},
        {"text": DONE, "save_prompt": str(saved)},
    ]
    loop, config = new_loop(db, workdir, steps)
    run(db, loop, config)
    first, second = prompts(saved)
    assert NO_HUMAN_NOTE not in first
    assert NO_HUMAN_NOTE in second
    assert db.iterations(loop.id)[0].signals["asked_question"] is True  # type: ignore[index]


def test_failing_gates_reject_a_claimed_completion_and_the_next_prompt_says_why(
    db: Store, workdir: Path
):
    saved = workdir.parent / "prompts.txt"
    steps: list[dict[str, Any]] = [
        {"text": DONE, "save_prompt": str(saved)},
        {**EDIT, "text": DONE, "edits": [{"path": "ok", "content": ""}], "save_prompt": str(saved)},
    ]
    gate = "test -f ok || (echo 'tests: 3 failed'; exit 1)"
    loop, config = new_loop(db, workdir, steps, gates=[gate])
    observer = Recorder()
    final = run(db, loop, config, observer=observer)
    assert final.status is LoopStatus.COMPLETED
    assert final.iteration == 2
    first, second = db.iterations(loop.id)
    assert first.completion_signal_found
    assert first.gate_results is not None
    assert first.gate_results[0]["passed"] is False
    assert second.gate_results is not None
    assert second.gate_results[0]["passed"] is True
    assert "tests: 3 failed" in prompts(saved)[1]
    assert gate in prompts(saved)[1]


def test_tokens_are_priced_when_the_agent_reports_no_cost(db: Store, workdir: Path):
    steps: list[dict[str, Any]] = [
        {
            "text": DONE,
            "cost_usd": None,
            "model": "claude-opus-5-5",
            "tokens": {"input": 1_000_000, "output": 100_000},
        },
    ]
    loop, config = new_loop(db, workdir, steps)
    final = run(db, loop, config)
    (only,) = db.iterations(loop.id)
    assert only.cost_source == "estimated"
    assert only.cost_usd == pytest.approx(4.0 + 2.0)
    assert final.cost_usd == pytest.approx(6.0)


def test_an_unknown_model_records_tokens_without_a_cost_and_warns_once(db: Store, workdir: Path):
    step = {"text": "x", "cost_usd": None, "model": "mystery-1", "tokens": {"input": 10}}
    loop, config = new_loop(db, workdir, [step, step, {**step, "text": DONE}])
    observer = Recorder()
    run(db, loop, config, observer=observer)
    assert [it.cost_usd for it in db.iterations(loop.id)] == [None, None, None]
    assert [it.tokens_input for it in db.iterations(loop.id)] == [10, 10, 10]
    warnings = [e.data["message"] for e in observer.events if e.event_type == "warning"]
    assert sum("mystery-1" in w for w in warnings) == 1


def test_user_prices_override_the_shipped_table(db: Store, workdir: Path):
    step = {"text": DONE, "cost_usd": None, "model": "house-model", "tokens": {"output": 2_000_000}}
    prices = {"house-model": {"input": 0, "output": 1.5, "cache_read": 0, "cache_write": 0}}
    loop, config = new_loop(db, workdir, [step], costs=prices)
    assert run(db, loop, config).cost_usd == pytest.approx(3.0)


def test_the_token_budget_counts_cache_tokens_only_when_asked(db: Store, workdir: Path):
    step = {"text": "x", "tokens": {"input": 10, "output": 10, "cache_read": 1000}}
    loop, config = new_loop(db, workdir, [step], max_tokens=500, count_cache_tokens=True)
    assert run(db, loop, config).stop_reason is StopReason.MAX_TOKENS
    loop, config = new_loop(db, workdir, [step], max_tokens=500, max_iterations=3)
    assert run(db, loop, config).stop_reason is StopReason.MAX_ITERATIONS


def test_an_allowed_warning_only_logs(db: Store, workdir: Path):
    warned = {
        "text": DONE,
        "rate_limit": {
            "status": "allowed_warning",
            "resetsAt": int(time.time()) + 3600,
            "rateLimitType": "seven_day",
        },
    }
    loop, config = new_loop(db, workdir, [warned])
    observer = Recorder()
    final = run(db, loop, config, observer=observer)
    assert final.status is LoopStatus.COMPLETED
    assert "waiting" not in observer.types()
    warnings = [e.data["message"] for e in observer.events if e.event_type == "warning"]
    assert any("close to the agent's usage limit (seven_day)" in w for w in warnings)


def test_outside_git_a_refused_edit_is_no_progress_and_repeated_denials_trip_the_breaker(
    db: Store, workdir: Path
):
    denied = {"tool_name": "Write", "tool_input": {"file_path": "notes.txt", "content": "x"}}
    step = {"text": "I could not write notes.txt.", "permission_denials": [denied]}
    loop, config = new_loop(
        db, workdir, [step], no_progress_threshold=10, permission_denial_threshold=2
    )
    final = run(db, loop, config)
    assert final.stop_reason is StopReason.CIRCUIT_BREAKER
    assert final.iteration == 2
    assert "permission denied for Write" in (final.stop_detail or "")
