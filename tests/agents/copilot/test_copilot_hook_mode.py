"""`ralphctl run --mode hook --agent copilot` with the REAL pinned Copilot CLI (1.0.102)
against the mock Chat Completions API: one headless `copilot` process kept going by the
`agentStop` hook that ralphctl adds to a Copilot home of its own for the run (the user's
`~/.copilot` untouched).

Each agentStop of the session is an iteration; a block sends its reason to the model as the
next prompt, in the same process and session; the final text is read from the session's
`events.jsonl` (the hook input has none). A session the CLI ended is continued with
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
from tests.agents.copilot.harness import RealCopilot
from tests.agents.pinned import run_ralphctl
from tests.mockapi import ApiError, Reply, Usage

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(120)]

TASK = "Write the notes."
DONE = "The notes are written.\n<promise>COMPLETE</promise>"


@pytest.fixture
def copilot(real_copilot: RealCopilot) -> RealCopilot:
    """A fresh mock, home and project for each test: the user's hooks differ between them."""
    return real_copilot


def run_hook_mode(copilot: RealCopilot, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ("run", "--mode", "hook", "--agent", "copilot", "--task", TASK, "--json", *extra)
    return run_ralphctl(copilot.env, copilot.project, database(copilot), *args, timeout=90)


def database(copilot: RealCopilot) -> Path:
    return copilot.project.parent / "ralphctl.db"


def stored(copilot: RealCopilot, loop_id: str) -> tuple[Any, list[Any]]:
    with Store.open(str(database(copilot))) as store:
        return store.get_loop(loop_id), store.iterations(loop_id)


def prompts(copilot: RealCopilot, since: int) -> list[str]:
    """The last user message of each main request since request ``since``."""
    texts = []
    for request in copilot.server.main_requests[since:]:
        user = [m for m in request.messages if m.get("role") == "user"][-1]
        texts.append(json.dumps(user["content"]))
    return texts


def user_hooks(copilot: RealCopilot) -> Path:
    return copilot.home / ".copilot" / "hooks"


def test_the_hook_keeps_one_copilot_session_going_until_the_marker(copilot):
    served = len(copilot.server.main_requests)
    copilot.server.set_script(
        Reply("Working (1).", Usage(1000, 10)),
        Reply("Working (2).", Usage(1100, 20)),
        Reply(DONE, Usage(1200, 30)),
    )

    done = run_hook_mode(copilot, "--max-iterations", "5")

    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["iterations"]) == ("completed", 3)
    loop, iterations = stored(copilot, summary["loop_id"])
    assert [(it.n, it.status) for it in iterations] == [(1, "ok"), (2, "ok"), (3, "ok")]
    assert iterations[0].output_summary == "Working (1)."
    assert "<promise>COMPLETE</promise>" in iterations[-1].output_summary
    assert iterations[-1].completion_signal_found
    assert {it.agent_session_id for it in iterations} == {loop.agent_session_id}
    tracker = load(tracker_path(str(copilot.project), str(loop.agent_session_id)))
    assert tracker is not None
    assert (tracker.fields["active"], tracker.fields["ended_reason"]) == (False, "completion")
    sent = prompts(copilot, served)
    assert len(sent) == 3  # one process: the task, then each block's reason
    assert TASK in sent[0]
    assert all(TASK not in text for text in sent[1:])
    assert not user_hooks(copilot).exists()  # the hook was the run's, not the user's
    session = copilot.home / ".copilot" / "session-state" / str(loop.agent_session_id)
    assert session.is_dir()  # the user's own sessions: `copilot --resume` finds it


def test_a_loop_ends_at_max_iterations_with_exit_1(copilot):
    copilot.server.set_script(*[Reply(f"Still working ({n}).") for n in range(1, 4)])

    done = run_hook_mode(copilot, "--max-iterations", "3")

    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["stop_reason"]) == ("stopped", "max_iterations")
    loop, iterations = stored(copilot, summary["loop_id"])
    assert [it.n for it in iterations] == [1, 2, 3]
    assert [it.output_summary for it in iterations] == [
        f"Still working ({n})." for n in range(1, 4)
    ]
    tracker = load(tracker_path(str(copilot.project), str(loop.agent_session_id)))
    assert tracker is not None
    assert (tracker.fields["active"], tracker.fields["ended_reason"]) == (False, "max_iterations")


def test_a_session_the_cli_ended_is_resumed(copilot):
    (copilot.project / "ralphctl.toml").write_text('[loops.defaults]\nerror_backoff_cap = "0s"\n')
    copilot.server.set_script(
        Reply("Working (1)."), ApiError(400, "invalid_request_error", "bad"), Reply(DONE)
    )

    done = run_hook_mode(copilot, "--max-iterations", "5")

    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["status"] == "completed"
    _loop, iterations = stored(copilot, summary["loop_id"])
    assert [it.status for it in iterations][-1] == "ok"
    assert "error" in [it.status for it in iterations]
    resumed = copilot.server.main_requests[-1].messages
    assert "Working (1)." in json.dumps(resumed)  # the same conversation


def test_the_installed_hook_is_off_in_a_run_so_no_stop_counts_twice(copilot, monkeypatch):
    monkeypatch.setenv("HOME", str(copilot.home))
    install(target("copilot").plan(Scope.USER, copilot.project, Interpreter(sys.executable), "t"))
    ran = copilot.project.parent / "installed-hook-ran"
    installed = user_hooks(copilot) / "ralphctl.json"
    hooks = json.loads(installed.read_text())
    (entry,) = hooks["hooks"]["agentStop"]
    entry["bash"] = f"touch {ran}; {entry['bash']}"
    installed.write_text(json.dumps(hooks))
    other_ran = copilot.project.parent / "other-hook-ran"
    other = {
        "version": 1,
        "hooks": {"agentStop": [{"type": "command", "bash": f"touch {other_ran}"}]},
    }
    (user_hooks(copilot) / "notify.json").write_text(json.dumps(other))
    copilot.server.set_script(Reply("Working (1)."), Reply(DONE))

    done = run_hook_mode(copilot, "--max-iterations", "5")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["iterations"] == 2
    assert not ran.exists()
    assert other_ran.exists()  # the user's other hooks still run


def test_an_isolated_hook_mode_run_has_only_our_hook(copilot):
    hooked = copilot.project.parent / "user-hook-ran"
    user_hooks(copilot).mkdir(parents=True)
    hook = {"type": "command", "bash": f"touch {hooked}"}
    (user_hooks(copilot) / "notify.json").write_text(
        json.dumps({"version": 1, "hooks": {"agentStop": [hook]}})
    )
    copilot.server.set_script(Reply("Working (1)."), Reply(DONE))

    done = run_hook_mode(copilot, "--max-iterations", "5", "--isolate-agent-config")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["iterations"] == 2
    assert not hooked.exists()


def test_a_project_hook_in_a_trusted_folder_runs_too_but_no_stop_counts_twice(copilot, monkeypatch):
    monkeypatch.setenv("HOME", str(copilot.home))
    plan = target("copilot").plan(Scope.PROJECT, copilot.project, Interpreter(sys.executable), "t")
    install(plan)
    ran = copilot.project.parent / "project-hook-ran"
    ((hook_file, text),) = plan.files.items()
    hooks = json.loads(text)
    (entry,) = hooks["hooks"]["agentStop"]
    entry["bash"] = f"touch {ran}; {entry['bash']}"
    hook_file.write_text(json.dumps(hooks))
    config = copilot.home / ".copilot" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"trustedFolders": [str(copilot.project)]}))
    copilot.server.set_script(Reply("Working (1)."), Reply(DONE))

    done = run_hook_mode(copilot, "--max-iterations", "5")

    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["iterations"]) == ("completed", 2)
    assert ran.exists()  # it forwarded its stops to the runner too, which counted each once


def test_a_loop_longer_than_the_clis_block_cap_goes_on_in_a_resumed_session(copilot):
    """Copilot CLI ends the turn at its 9th block in a row; the runner resumes the session."""
    (copilot.project / "ralphctl.toml").write_text(
        "[loops.defaults]\nno_progress_threshold = false\n"
    )
    copilot.server.set_script(*[Reply(f"Working ({n}).") for n in range(1, 12)], Reply(DONE))

    done = run_hook_mode(copilot, "--max-iterations", "15")

    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["iterations"]) == ("completed", 12)
    loop, iterations = stored(copilot, summary["loop_id"])
    assert [it.n for it in iterations] == list(range(1, 13))
    assert {it.agent_session_id for it in iterations} == {loop.agent_session_id}
    assert len({it.agent_pid for it in iterations}) == 2  # the CLI's cap, then --resume
    assert "Working (1)." in json.dumps(copilot.server.main_requests[-1].messages)
