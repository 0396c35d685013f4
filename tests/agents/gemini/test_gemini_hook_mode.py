"""`ralphctl run --mode hook --agent gemini` with the REAL pinned Gemini CLI (0.61.0) against
the mock Gemini API: one headless `gemini` process kept going by the `AfterAgent` hook that
ralphctl adds to the settings of a home of its own for the run (the user's files untouched).

Each AfterAgent of the session is an iteration; a deny sends its reason to the model as the
next prompt, in the same process and session; a session the CLI ended is continued with
`--resume <id>`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ralphctl.hook.paths import tracker_path
from ralphctl.hook.tracker import load
from ralphctl.plugin.installer import install
from ralphctl.plugin.layout import Interpreter
from ralphctl.plugin.scopes import Scope
from ralphctl.plugin.targets import target
from ralphctl.store.repository import Store
from tests.agents.gemini.harness import SETTINGS, RealGemini
from tests.agents.pinned import run_ralphctl
from tests.mockapi import ApiError, Reply, Usage

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(120)]

TASK = "Write the notes."
DONE = "The notes are written.\n<promise>COMPLETE</promise>"


def run_hook_mode(gemini: RealGemini, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ("run", "--mode", "hook", "--agent", "gemini", "--task", TASK, "--json", *extra)
    return run_ralphctl(gemini.env, gemini.project, database(gemini), *args, timeout=90)


def database(gemini: RealGemini) -> Path:
    return gemini.project.parent / "ralphctl.db"


def stored(gemini: RealGemini, loop_id: str) -> tuple[Any, list[Any]]:
    with Store.open(str(database(gemini))) as store:
        return store.get_loop(loop_id), store.iterations(loop_id)


def prompts(gemini: RealGemini, since: int) -> list[str]:
    """The last user text of each main request since request ``since``."""
    texts = []
    for request in gemini.main_requests[since:]:
        user = [c for c in request.body["contents"] if c["role"] == "user"][-1]
        texts.append(" ".join(part.get("text", "") for part in user["parts"]))
    return texts


def test_the_hook_keeps_one_gemini_session_going_until_the_marker(gemini):
    user_settings = (gemini.home / ".gemini" / "settings.json").read_text()
    served = len(gemini.main_requests)
    gemini.server.set_script(
        Reply("Working (1).", Usage(1000, 10)),
        Reply("Working (2).", Usage(1100, 20)),
        Reply(DONE, Usage(1200, 30)),
    )

    done = run_hook_mode(gemini, "--max-iterations", "5")

    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["iterations"]) == ("completed", 3)
    loop, iterations = stored(gemini, summary["loop_id"])
    assert [(it.n, it.status) for it in iterations] == [(1, "ok"), (2, "ok"), (3, "ok")]
    # AfterAgent's prompt_response holds every reply since the process started (CLI 0.61.0):
    # each summary is that iteration's reply, from the session's JSONL transcript
    assert [it.output_summary for it in iterations[:2]] == ["Working (1).", "Working (2)."]
    assert "<promise>COMPLETE</promise>" in iterations[-1].output_summary
    assert iterations[-1].completion_signal_found
    assert {it.agent_session_id for it in iterations} == {loop.agent_session_id}
    tracker = load(tracker_path(str(gemini.project), str(loop.agent_session_id)))
    assert tracker is not None
    assert (tracker.fields["active"], tracker.fields["ended_reason"]) == (False, "completion")
    sent = prompts(gemini, served)
    assert len(sent) == 3  # one process: the task, then each deny's reason
    assert TASK in sent[0]
    assert all(TASK not in text and text for text in sent[1:])
    assert (gemini.home / ".gemini" / "settings.json").read_text() == user_settings


def test_clear_context_gives_each_iteration_a_fresh_memory_in_the_same_session(gemini):
    served = len(gemini.main_requests)
    gemini.server.set_script(Reply("Working (1)."), Reply("Working (2)."), Reply(DONE))

    done = run_hook_mode(gemini, "--max-iterations", "5", "--clear-context")

    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["iterations"]) == ("completed", 3)
    loop, iterations = stored(gemini, summary["loop_id"])
    # each summary is that iteration's reply, read from the session's JSONL transcript
    assert [it.output_summary for it in iterations[:2]] == ["Working (1).", "Working (2)."]
    assert {it.agent_session_id for it in iterations} == {loop.agent_session_id}
    third = json.dumps(gemini.main_requests[served + 2].body["contents"])
    assert "Working (1)." not in third
    assert "Working (2)." not in third
    assert "Ralph iteration 3/5" in third  # the block's reason is the next prompt


def test_a_loop_ends_at_max_iterations_with_exit_1(gemini):
    gemini.server.set_script(*[Reply(f"Still working ({n}).") for n in range(1, 4)])

    done = run_hook_mode(gemini, "--max-iterations", "3")

    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["stop_reason"]) == ("stopped", "max_iterations")
    loop, iterations = stored(gemini, summary["loop_id"])
    assert len(iterations) == 3
    tracker = load(tracker_path(str(gemini.project), str(loop.agent_session_id)))
    assert tracker is not None
    assert (tracker.fields["active"], tracker.fields["ended_reason"]) == (False, "max_iterations")


def test_a_session_the_cli_ended_is_resumed(gemini):
    (gemini.project / "ralphctl.toml").write_text('[loops.defaults]\nerror_backoff_cap = "0s"\n')
    served = len(gemini.main_requests)
    gemini.server.set_script(
        Reply("Working (1)."), ApiError(400, "INVALID_ARGUMENT", "bad"), Reply(DONE)
    )

    done = run_hook_mode(gemini, "--max-iterations", "5")

    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["status"] == "completed"
    _loop, iterations = stored(gemini, summary["loop_id"])
    assert [it.status for it in iterations] == ["ok", "error", "ok"]
    assert len(gemini.main_requests) - served == 3
    resumed = gemini.main_requests[-1].body["contents"]
    assert any("Working (1)." in json.dumps(c) for c in resumed)  # the same conversation


def test_an_isolated_hook_mode_run_has_only_our_hook(gemini):
    hooked = gemini.project.parent / "user-hook-ran"
    user_hook = {"type": "command", "command": f"touch {hooked}; echo '{{}}'"}
    settings = {**SETTINGS, "hooks": {"AfterAgent": [{"hooks": [user_hook]}]}}
    (gemini.home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    (gemini.project / "ralphctl.toml").write_text("[loops.defaults]\nisolate_agent_config = true\n")
    gemini.server.set_script(Reply("Working (1)."), Reply(DONE))

    done = run_hook_mode(gemini, "--max-iterations", "5")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["iterations"] == 2
    assert not hooked.exists()


def test_the_installed_hook_is_off_in_a_run_so_no_stop_counts_twice(gemini, monkeypatch):
    monkeypatch.setenv("HOME", str(gemini.home))
    install(target("gemini").plan(Scope.USER, gemini.project, Interpreter(sys.executable), "t"))
    settings_file = gemini.home / ".gemini" / "settings.json"
    settings = json.loads(settings_file.read_text())
    ran = gemini.project.parent / "installed-hook-ran"
    (installed,) = settings["hooks"]["AfterAgent"][0]["hooks"]
    installed["command"] = f"touch {ran}; {installed['command']}"  # still named "ralphctl"
    settings_file.write_text(json.dumps(settings))
    gemini.server.set_script(Reply("Working (1)."), Reply(DONE))

    done = run_hook_mode(gemini, "--max-iterations", "5")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["iterations"] == 2
    assert not ran.exists()
