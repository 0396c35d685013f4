"""The installed integration driven by the REAL Claude Code CLI against the mock Messages API.

`/ralph-loop` arms a loop through the command file's `!` block, the installed Stop hook keeps
the session going, and the promise ends it. Both scopes: project (`.claude/`) and user (a
local marketplace enabled in `$CLAUDE_CONFIG_DIR/settings.json`).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from ralphctl import __version__
from ralphctl.hook.tracker import Tracker, load
from ralphctl.plugin.installer import install, uninstall
from ralphctl.plugin.layout import Interpreter
from ralphctl.plugin.scopes import Plan, project_plan, user_plan
from tests.mockapi import ApiError, RecordedRequest, Reply, ToolCall
from tests.realcli.fixtures import every_supported_version
from tests.realcli.harness import ClaudeRun, RealClaude

pytestmark = pytest.mark.real_cli

PYTHON = Interpreter(sys.executable)
SESSION = "5e55a1d0-0000-4000-8000-00000000c0de"
ARGUMENTS = 'Write the files --max-iterations=5 --completion-promise "ALL DONE"'
DONE = "Both files are written.\n<promise>ALL DONE</promise>"
EDITS = ("--permission-mode", "acceptEdits")


@pytest.fixture
def user_scope(real_claude: RealClaude, monkeypatch: pytest.MonkeyPatch) -> Plan:
    """ralphctl's plugin installed for the user of the fixture's temp home."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", real_claude.env["CLAUDE_CONFIG_DIR"])
    monkeypatch.setenv("RALPHCTL_PLUGIN_DIR", str(real_claude.home / "ralphctl-plugin"))
    plan = user_plan(PYTHON, __version__)
    install(plan)
    return plan


@pytest.fixture
def project_scope(real_claude: RealClaude) -> Plan:
    plan = project_plan(real_claude.project, PYTHON, __version__)
    install(plan)
    return plan


@pytest.fixture
def spaced_python(tmp_path: Path) -> Interpreter:
    """This virtual environment's Python, reached through a folder whose name has a space."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("needs to run in a virtual environment")
    venv, alias = Path(sys.prefix), tmp_path / "py env"
    (alias / "bin").mkdir(parents=True)
    shutil.copy(venv / "pyvenv.cfg", alias)
    (alias / "lib").symlink_to(venv / "lib")
    (alias / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    return Interpreter(str(alias / "bin" / "python"))


def script_two_files(real_claude: RealClaude) -> None:
    """Two iterations, each with a tool call; the second ends with the promise."""
    real_claude.server.set_script(
        ToolCall("Write", {"file_path": "a.txt", "content": "a\n"}, text_before="Writing a."),
        Reply("a.txt is written; b.txt is next."),
        ToolCall("Write", {"file_path": "b.txt", "content": "b\n"}),
        Reply(DONE),
    )


def tracker(real_claude: RealClaude, session_id: str) -> Tracker:
    path = real_claude.project / ".ralph" / "sessions" / session_id / "loop-tracker.md"
    found = load(str(path))
    assert found is not None, f"no tracker at {path}"
    return found


def user_text(request: RecordedRequest) -> str:
    return "\n".join(request.user_texts())


def assert_completed_on_the_promise(real_claude: RealClaude, run: ClaudeRun) -> None:
    assert run.exit_code == 0, run.stderr
    assert run.result["result"] == DONE
    assert (real_claude.project / "a.txt").read_text() == "a\n"
    assert (real_claude.project / "b.txt").read_text() == "b\n"
    server = real_claude.server
    assert len(server.main_requests) == 4
    assert not server.exhausted_requests
    armed = user_text(server.main_requests[0])
    # 2.1.100 runs a command's `!` block without the session id: the loop is armed pending,
    # and the session's first stop claims it.
    assert "Ralph loop armed for session" in armed or "Ralph loop armed (pending" in armed
    assert "\n<promise>ALL DONE</promise>\n" in armed  # the exact completion line
    assert "ONLY when its statement is completely" in armed
    continued = user_text(server.main_requests[2])
    assert "Stop hook feedback:" in continued
    loop = tracker(real_claude, run.init["session_id"])
    assert loop.fields["active"] is False
    assert loop.fields["iteration"] == 2
    assert loop.fields["max_iterations"] == 5
    assert loop.fields["completion_marker"] == "<promise>ALL DONE</promise>"
    assert loop.fields["task"] == "Write the files"


@every_supported_version
def test_a_project_scope_loop_runs_tool_calls_until_the_promise(real_claude, project_scope):
    script_two_files(real_claude)
    run = real_claude.run(f"/ralph-loop {ARGUMENTS}", *EDITS)
    assert_completed_on_the_promise(real_claude, run)


def test_an_interpreter_path_with_spaces_is_quoted_everywhere(real_claude, spaced_python):
    install(project_plan(real_claude.project, spaced_python, __version__))
    script_two_files(real_claude)
    run = real_claude.run(f"/ralph-loop {ARGUMENTS}", *EDITS)
    assert_completed_on_the_promise(real_claude, run)


@every_supported_version
def test_a_user_scope_plugin_loop_runs_tool_calls_until_the_promise(real_claude, user_scope):
    script_two_files(real_claude)
    run = real_claude.run(f"/ralphctl:ralph-loop {ARGUMENTS}", *EDITS)
    [plugin] = [p for p in run.init["plugins"] if p["source"] == "ralphctl@ralphctl"]
    assert Path(plugin["path"]) == real_claude.home / "ralphctl-plugin" / "ralphctl"
    assert_completed_on_the_promise(real_claude, run)


def test_after_user_uninstall_a_new_session_has_no_plugin(real_claude, user_scope):
    uninstall(user_scope)
    real_claude.server.set_script(Reply("ok"))
    run = real_claude.run("/ralphctl:ralph-loop Do it")
    assert "ralphctl@ralphctl" not in [p["source"] for p in run.init["plugins"]]
    assert not (real_claude.project / ".ralph").exists()


def test_the_prompt_reaches_the_tracker_intact(real_claude, project_scope):
    real_claude.server.set_script(Reply("Looked at it."))
    run = real_claude.run(
        "/ralph-loop Fix the user's bug in $(whoami) `id` --max-iterations 1",
        "--session-id",
        SESSION,
    )
    assert run.exit_code == 0, run.stderr
    assert tracker(real_claude, SESSION).fields["task"] == "Fix the user's bug in $(whoami) `id`"


def test_an_unknown_flag_is_an_error_and_arms_nothing(real_claude, project_scope):
    real_claude.server.set_script(Reply("should not be asked"))
    run = real_claude.run("/ralph-loop Do it --max-iteration 3")
    assert "--max-iteration" in run.result["result"]
    assert real_claude.server.main_requests == []
    assert not (real_claude.project / ".ralph" / "sessions").exists()


def test_status_and_cancel_report_the_sessions_loop(real_claude, project_scope):
    server = real_claude.server
    busy = ApiError(529, "overloaded_error", "Busy")
    # One continued iteration, then the API fails: the session ends with its loop active.
    server.set_script(Reply("Step one."), busy)
    armed = real_claude.run(
        "/ralph-loop Polish the docs --max-iterations 5", "--session-id", SESSION
    )
    assert armed.exit_code == 1
    assert tracker(real_claude, SESSION).fields["active"] is True

    # /ralph-status shows the loop; the turn's own stop is a loop iteration like any other.
    server.set_script(Reply("Shown."), busy)
    real_claude.run("/ralph-status", "--resume", SESSION)
    assert "active, iteration 2/5" in user_text(server.main_requests[-2])
    assert tracker(real_claude, SESSION).fields["iteration"] == 3

    server.set_script(Reply("No loop here."))
    real_claude.run("/ralph-status")  # another session
    assert "No active Ralph loop" in user_text(server.main_requests[-1])

    before = len(server.main_requests)
    server.set_script(Reply("Cancelled."))
    cancelled = real_claude.run("/cancel-ralph", "--resume", SESSION)
    assert cancelled.exit_code == 0, cancelled.stderr
    assert len(server.main_requests) == before + 1  # the stop after the cancel is allowed
    said = user_text(server.main_requests[-1])
    assert f"Cancelled the Ralph loop of session {SESSION} (was at iteration 3)" in said
    assert tracker(real_claude, SESSION).fields["active"] is False

    server.set_script(Reply("Nothing to cancel."))
    real_claude.run("/cancel-ralph", "--resume", SESSION)
    assert "No active Ralph loop" in user_text(server.main_requests[-1])
