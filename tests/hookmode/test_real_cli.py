"""`ralphctl run --mode hook` driving the REAL Claude Code CLI against the mock Messages API.

One `claude -p` session; the Stop hook that ralphctl injects with `--settings` forwards every
Stop to the runner, which decides, records and enforces the budgets.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ralphctl import __version__
from ralphctl.domain.steering import NO_HUMAN_NOTE
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.paths import tracker_path
from ralphctl.hook.tracker import load
from ralphctl.plugin.installer import install
from ralphctl.plugin.layout import Interpreter
from ralphctl.plugin.scopes import user_plan
from ralphctl.store.repository import Store
from tests.mockapi import ApiError, RecordedRequest, Reply, ToolCall, expected_cost
from tests.mockapi.turns import Answer
from tests.realcli.fixtures import every_supported_version
from tests.realcli.harness import RealClaude

pytestmark = pytest.mark.real_cli

TASK = "Write the notes."


def environment(real_claude: RealClaude) -> dict[str, str]:
    db = real_claude.home / "ralphctl.db"
    return {**real_claude.env, "RALPHCTL_DB": str(db), "RALPHCTL_CONFIG": "/nonexistent.toml"}


def ralphctl(real_claude: RealClaude, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ralphctl", *args],
        env=environment(real_claude),
        cwd=real_claude.project,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def run_hook_mode(real_claude: RealClaude, *extra: str) -> subprocess.CompletedProcess[str]:
    return ralphctl(real_claude, "run", "--mode", "hook", "--task", TASK, "--json", *extra)


def without_no_progress_guard(real_claude: RealClaude) -> None:
    """The project's settings turn the no-progress trip off, for tests of something else."""
    config = real_claude.project / "ralphctl.toml"
    config.write_text("[loops.defaults]\nno_progress_threshold = false\n")


def summary_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def stored(real_claude: RealClaude, loop_id: str) -> tuple[Any, list[Any]]:
    with Store.open(str(real_claude.home / "ralphctl.db")) as store:
        return store.get_loop(loop_id), store.iterations(loop_id)


def tracker_fields(real_claude: RealClaude, session_id: str) -> dict[str, Scalar]:
    tracker = load(tracker_path(str(real_claude.project), session_id))
    assert tracker is not None
    return tracker.fields


def feedback_of(request: RecordedRequest) -> bool:
    return request.user_texts()[-1].startswith("Stop hook feedback:\n")


def feedback(real_claude: RealClaude) -> list[str]:
    """The block reasons the CLI sent back to the model, in order."""
    texts = [t for request in real_claude.server.main_requests for t in request.user_texts()]
    return [t for t in dict.fromkeys(texts) if t.startswith("Stop hook feedback:\n")]


def test_a_loop_stops_at_max_iterations_with_exit_1_and_each_stop_is_an_iteration(real_claude):
    turns = [Reply(f"Still working ({n}).") for n in range(1, 4)]
    real_claude.server.set_script(*turns)

    done = run_hook_mode(real_claude, "--max-iterations", "3", "--max-cost", "3")

    assert done.returncode == 1, done.stderr
    summary = summary_of(done)
    assert (summary["status"], summary["stop_reason"]) == ("stopped", "max_iterations")
    assert summary["iterations"] == 3
    assert summary["cost_usd"] == round(expected_cost(turns), 6)  # reported, to the 1e-6 of JSON
    loop, iterations = stored(real_claude, summary["loop_id"])
    assert (loop.mode, loop.agent_session_id) == ("hook", loop.agent_session_id)
    assert [(it.n, it.status, it.output_summary) for it in iterations] == [
        (1, "ok", "Still working (1)."),
        (2, "ok", "Still working (2)."),
        (3, "ok", "Still working (3)."),
    ]
    assert sum(it.cost_usd for it in iterations) == pytest.approx(expected_cost(turns))
    assert {it.cost_source for it in iterations} == {"reported"}
    assert (loop.tokens_input, loop.tokens_output) == (3000, 300)
    fields = tracker_fields(real_claude, str(loop.agent_session_id))
    assert (fields["active"], fields["ended_reason"], fields["loop_id"]) == (
        False,
        "max_iterations",
        loop.id,
    )
    assert len(feedback(real_claude)) == 2  # two blocks, then the bound
    assert len(real_claude.server.main_requests) == 3
    assert not real_claude.server.exhausted_requests
    first_prompt = real_claude.server.main_requests[0].user_texts()[-1]
    assert first_prompt.startswith(TASK)
    assert "<promise>COMPLETE</promise>" in first_prompt

    shown = ralphctl(real_claude, "history", loop.id)
    assert shown.returncode == 0, shown.stderr
    for n in (1, 2, 3):
        assert f"Still working ({n})." in shown.stdout


def test_a_loop_completes_on_the_promise_after_tool_calls(real_claude):
    turns: list[Answer] = [
        ToolCall("Write", {"file_path": "a.txt", "content": "a\n"}, text_before="First file."),
        Reply("Wrote a.txt."),
        ToolCall("Write", {"file_path": "b.txt", "content": "b\n"}),
        Reply("Wrote b.txt."),
        Reply("Both files are written.\n<promise>DONE</promise>"),
    ]
    real_claude.server.set_script(*turns)

    done = run_hook_mode(real_claude, "--max-iterations", "5", "--completion-promise", "DONE")

    assert done.returncode == 0, done.stderr
    summary = summary_of(done)
    assert (summary["status"], summary["iterations"]) == ("completed", 3)
    assert summary["cost_usd"] == round(expected_cost(turns), 6)
    assert (real_claude.project / "a.txt").read_text() == "a\n"
    assert (real_claude.project / "b.txt").read_text() == "b\n"
    loop, iterations = stored(real_claude, summary["loop_id"])
    assert [it.completion_signal_found for it in iterations] == [False, False, True]
    assert [it.output_summary for it in iterations] == [
        "Wrote a.txt.",
        "Wrote b.txt.",
        "Both files are written. <promise>DONE</promise>",
    ]
    # Shares follow the live estimates: the first two iterations made two requests each.
    costs = [it.cost_usd for it in iterations]
    assert costs == pytest.approx([0.012, 0.012, 0.006], rel=0.05)
    assert tracker_fields(real_claude, str(loop.agent_session_id))["ended_reason"] == "completion"
    assert "(Ralph iteration 3/5)" in feedback(real_claude)[-1]
    assert not real_claude.server.exhausted_requests


def test_more_than_nine_text_only_blocks_still_reach_the_loops_own_bound(real_claude):
    """Claude Code ends a turn after 9 blocks without a tool call unless its block cap is
    raised: ralphctl raises it above max_iterations for the session it starts."""
    without_no_progress_guard(real_claude)  # text-only iterations change nothing
    real_claude.server.set_script(*[Reply(f"Thinking ({n}).") for n in range(1, 13)])

    done = run_hook_mode(real_claude, "--max-iterations", "12")

    assert done.returncode == 1, done.stderr
    summary = summary_of(done)
    assert (summary["stop_reason"], summary["iterations"]) == ("max_iterations", 12)
    loop, iterations = stored(real_claude, summary["loop_id"])
    assert [it.status for it in iterations] == ["ok"] * 12
    fields = tracker_fields(real_claude, str(loop.agent_session_id))
    assert (fields["iteration"], fields["cap_overrides"]) == (12, 0)
    assert len(real_claude.server.main_requests) == 12


def test_a_session_ended_by_a_low_block_cap_is_reported_and_resumed_not_completed(real_claude):
    """A user who set a low cap in their settings: Claude Code ends the session after its
    blocks; ralphctl says so and resumes the session until the loop's own bound."""
    settings = real_claude.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"env": {"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "3"}}))
    without_no_progress_guard(real_claude)  # text-only iterations change nothing
    turns = [Reply(f"Thinking ({n}).") for n in range(1, 7)]
    real_claude.server.set_script(*turns)

    done = run_hook_mode(real_claude, "--max-iterations", "6")

    assert done.returncode == 1, done.stderr
    summary = summary_of(done)
    assert (summary["stop_reason"], summary["iterations"]) == ("max_iterations", 6)
    assert summary["cost_usd"] == pytest.approx(expected_cost(turns))
    assert "ended the session itself after a block" in done.stderr
    loop, iterations = stored(real_claude, summary["loop_id"])
    assert [it.status for it in iterations] == ["ok"] * 6
    assert tracker_fields(real_claude, str(loop.agent_session_id))["cap_overrides"] == 1
    resumed = [r for r in real_claude.server.main_requests if not feedback_of(r)]
    assert len(resumed) == 2  # the first prompt, and the continue message of the resume
    assert len(real_claude.server.main_requests) == 6


def test_an_api_error_is_recorded_and_the_session_resumed(real_claude):
    (real_claude.project / "ralphctl.toml").write_text(
        '[loops.defaults]\nerror_backoff_cap = "0s"\n'
    )
    real_claude.server.set_script(
        Reply("Started."), ApiError(529), Reply("Done.\n<promise>COMPLETE</promise>")
    )

    done = run_hook_mode(real_claude, "--max-iterations", "5")

    assert done.returncode == 0, done.stderr
    _, iterations = stored(real_claude, summary_of(done)["loop_id"])
    assert [(it.n, it.status) for it in iterations] == [(1, "ok"), (2, "error"), (3, "ok")]
    assert "529" in (iterations[1].error_message or "")
    assert iterations[2].completion_signal_found


@every_supported_version
def test_a_429_parks_the_loop_and_the_same_session_goes_on_once_the_limit_resets(real_claude):
    # One consecutive error would fail the loop: a usage limit must not count as one.
    (real_claude.project / "ralphctl.toml").write_text(
        '[loops.defaults]\ncircuit_breaker_threshold = 1\nerror_backoff_cap = "0s"\n'
    )
    resets: list[int] = []

    def usage_limited(request: RecordedRequest) -> Answer:
        resets.append(int(time.time()) + 3)  # the CLI shows the message: "…|<reset epoch>"
        return ApiError(429, "rate_limit_error", f"Claude AI usage limit reached|{resets[-1]}")

    real_claude.server.set_script(
        Reply("Started."), usage_limited, Reply("Done.\n<promise>COMPLETE</promise>")
    )

    done = run_hook_mode(real_claude, "--max-iterations", "5")

    assert done.returncode == 0, done.stderr
    loop, iterations = stored(real_claude, summary_of(done)["loop_id"])
    assert (loop.status, loop.consecutive_errors, loop.rate_limited_until) == ("completed", 0, None)
    assert [(it.n, it.status) for it in iterations] == [(1, "ok"), (2, "rate_limited"), (3, "ok")]
    assert "usage limit reached" in (iterations[1].error_message or "")
    resumed_at = iterations[2].started_at.timestamp()
    assert resumed_at >= resets[0] - 0.05  # waited for the stated reset, not the default 300 s
    resumed = real_claude.server.main_requests[-1].body["messages"]
    assert "Started." in json.dumps(resumed)  # the same session, continued: its history is sent
    assert {it.agent_session_id for it in iterations} == {loop.agent_session_id}
    with Store.open(str(real_claude.home / "ralphctl.db")) as store:
        waits = [e.data for e in store.events_since(0, loop.id) if e.event_type == "waiting"]
    assert [w["status"] for w in waits] == ["rate_limited"]


def test_a_question_and_a_denied_tool_are_answered_in_the_next_block_as_in_fresh_mode(real_claude):
    real_claude.server.set_script(
        Reply("Which database should I use, Postgres or SQLite?"),
        ToolCall("Write", {"file_path": "notes.txt", "content": "x"}),
        Reply("I could not write notes.txt."),
        Reply("Done.\n<promise>COMPLETE</promise>"),
    )

    done = run_hook_mode(real_claude, "--max-iterations", "5", "--permission-mode", "default")

    assert done.returncode == 0, done.stderr
    asked, denied = feedback(real_claude)
    assert asked.endswith(f"\n\n{NO_HUMAN_NOTE}")
    assert "These tools were denied in the last iteration and will be denied again: Write" in denied
    assert NO_HUMAN_NOTE not in denied


def test_tools_denied_in_iterations_that_change_nothing_trip_the_circuit_breaker(real_claude):
    subprocess.run(["git", "init", "-q", str(real_claude.project)], check=True)
    denied = ToolCall("Write", {"file_path": "notes.txt", "content": "x"})
    real_claude.server.set_script(
        *[turn for n in (1, 2, 3) for turn in (denied, Reply(f"Could not write ({n})."))]
    )

    done = run_hook_mode(real_claude, "--max-iterations", "10", "--permission-mode", "default")

    assert done.returncode == 3, done.stderr
    summary = summary_of(done)
    assert (summary["status"], summary["stop_reason"]) == ("failed", "circuit_breaker")
    loop, iterations = stored(real_claude, summary["loop_id"])
    assert "denied" in (loop.stop_detail or "")
    assert [[d["tool_name"] for d in it.permission_denials] for it in iterations] == [
        ["Write"]
    ] * 3  # the trip at the second is judged after its Stop: the loop ends at the third
    assert not (real_claude.project / "notes.txt").exists()


def test_a_user_scope_ralphctl_plugin_does_not_count_each_stop_twice(real_claude, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", real_claude.env["CLAUDE_CONFIG_DIR"])
    monkeypatch.setenv("RALPHCTL_PLUGIN_DIR", str(real_claude.home / "ralphctl-plugin"))
    install(user_plan(Interpreter(sys.executable), __version__))
    real_claude.server.set_script(*[Reply(f"Still working ({n}).") for n in range(1, 5)])

    done = run_hook_mode(real_claude, "--max-iterations", "4")

    assert done.returncode == 1, done.stderr
    assert summary_of(done)["iterations"] == 4
    assert len(real_claude.server.main_requests) == 4


def test_a_workflow_brings_its_prompt_marker_bound_continue_message_and_tracker(
    real_claude, tmp_path, monkeypatch
):
    source = tmp_path / "notes"
    source.mkdir()
    (source / "tracker.md").write_text("# Notes checklist\n\n- [ ] draft\n")
    loop_spec = {
        "completionMarker": "<promise>NOTES DONE</promise>",
        "maxIterations": 4,
        "continueMessage": "Keep writing the notes.",
        "trackerTemplate": "tracker.md",
    }
    workflow = {
        "name": "notes",
        "promptTemplate": "Write the notes for {input}.",
        "loop": loop_spec,
    }
    (source / "workflow.json").write_text(json.dumps(workflow))
    monkeypatch.setitem(real_claude.env, "RALPHCTL_WORKFLOWS_DIR", str(tmp_path / "registry"))
    assert ralphctl(real_claude, "workflow", "install", str(source)).returncode == 0
    real_claude.server.set_script(Reply("Drafting."), Reply("Done.\n<promise>NOTES DONE</promise>"))

    done = ralphctl(real_claude, "run", "--mode", "hook", "--workflow", "notes", "v2.0", "--json")

    assert done.returncode == 0, done.stderr
    summary = summary_of(done)
    assert (summary["status"], summary["iterations"]) == ("completed", 2)
    loop, _ = stored(real_claude, summary["loop_id"])
    assert loop.workflow == "notes"
    first_prompt = real_claude.server.main_requests[0].user_texts()[-1]
    assert first_prompt.startswith("Write the notes for v2.0.")
    [reason] = feedback(real_claude)
    assert reason.startswith("Stop hook feedback:\nKeep writing the notes.")
    tracker = load(tracker_path(str(real_claude.project), str(loop.agent_session_id)))
    assert tracker is not None
    assert "# Notes checklist" in tracker.body
    assert (tracker.fields["max_iterations"], tracker.fields["completion_marker"]) == (
        4,
        "<promise>NOTES DONE</promise>",
    )


def test_ctrl_c_exits_130_and_keeps_the_state(real_claude):
    reached, release = threading.Event(), threading.Event()

    def stuck(request: RecordedRequest) -> Answer:
        reached.set()
        release.wait(60)
        return Reply("too late")

    real_claude.server.set_script(Reply("Started."), stuck)
    runner = subprocess.Popen(
        [sys.executable, "-m", "ralphctl", "run", "--mode", "hook", "--task", TASK, "--json"],
        env=environment(real_claude),
        cwd=real_claude.project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert reached.wait(60), "the second iteration never asked the API"
        runner.send_signal(signal.SIGINT)
        out, err = runner.communicate(timeout=60)
    finally:
        release.set()
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 130, err
    summary = json.loads(out)
    assert (summary["status"], summary["stop_reason"]) == ("stopped", "interrupted")
    loop, iterations = stored(real_claude, summary["loop_id"])
    assert [(it.n, it.status) for it in iterations] == [(1, "ok"), (2, "interrupted")]
    assert loop.runner_pid is None
    fields = tracker_fields(real_claude, str(loop.agent_session_id))
    assert (fields["active"], fields["ended_reason"]) == (False, "interrupted")
    state = json.loads((real_claude.project / ".ralph" / "state.json").read_text())
    assert (state["status"], state["stopReason"]) == ("stopped", "interrupted")


def test_options_that_mean_nothing_in_one_session_are_refused(real_claude):
    done = ralphctl(real_claude, "run", "--mode", "hook", "--task", TASK, "--cooldown", "5s")
    assert done.returncode == 2
    assert "--cooldown: not available with --mode hook" in done.stderr
    assert not real_claude.server.requests


def test_the_dry_run_shows_the_injected_hook_and_environment(real_claude):
    done = ralphctl(real_claude, "run", "--mode", "hook", "--task", TASK, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "--settings" in done.stdout
    assert "RALPHCTL_HOOK_SOCKET=" in done.stdout
    assert "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=101" in done.stdout
    assert not (Path(real_claude.project) / ".ralph").exists()
