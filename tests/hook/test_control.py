"""Status and cancel: /ralph-status, /cancel-ralph, `ralphctl cancel` and `ralphctl sessions`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ralphctl.cli.session import cancel_command, sessions_command
from ralphctl.hook.arming import arm
from ralphctl.hook.control import NO_LOOP, cancel, list_loops
from ralphctl.hook.tracker import update_fields
from tests.hook.helpers import (
    OTHER_SESSION,
    SESSION,
    decision,
    fields_of,
    hook_env,
    run_hook,
    session_tracker,
    stop_event,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def hook_command(project: Path, *args: str, session: str | None = SESSION) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ralphctl.hook", *args],
        env=hook_env(project, session=session),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_cancel_deactivates_the_sessions_loop_and_reports_its_iteration(project):
    arm(str(project), "Fix it", session_id=SESSION)
    run_hook(stop_event(), hook_env(project))
    message = hook_command(project, "cancel")
    assert message == f"Cancelled the Ralph loop of session {SESSION} (was at iteration 2)."
    assert fields_of(session_tracker(project))["ended_reason"] == "user_stop"
    assert decision(run_hook(stop_event(), hook_env(project))) is None
    assert hook_command(project, "cancel") == NO_LOOP


def test_cancel_touches_only_its_own_session(project):
    arm(str(project), "theirs", session_id=OTHER_SESSION)
    assert hook_command(project, "cancel") == NO_LOOP
    assert fields_of(session_tracker(project, OTHER_SESSION))["active"] is True


def test_without_a_session_cancel_takes_the_only_active_loop_or_asks(project):
    arm(str(project), "one", session_id=SESSION)
    arm(str(project), "pending one")
    result = cancel(str(project))
    assert result.loop is None
    assert "Several active Ralph loops" in result.message
    assert cancel(str(project), SESSION).loop is not None
    pending = cancel(str(project))
    assert pending.loop is not None
    assert pending.loop.kind == "pending"
    assert not list((project / ".ralph" / "pending").glob("*.md"))


def test_status_shows_the_sessions_loop(project):
    assert hook_command(project, "status") == NO_LOOP
    arm(str(project), "Fix it", session_id=SESSION, max_iterations=9)
    status = hook_command(project, "status")
    assert status.startswith(f"Ralph loop (session {SESSION}): active, iteration 1/9")
    assert "<promise>COMPLETE</promise>" in status
    hook_command(project, "cancel")
    ended = hook_command(project, "status")
    assert ended.startswith(f"Ralph loop (session {SESSION}): ended (user_stop), iteration 1/9")


def test_a_loop_paused_by_its_runner_shows_as_paused(project):
    arm(str(project), "Fix it", session_id=SESSION, max_iterations=9)
    update_fields(str(session_tracker(project)), {"active": False, "paused": True})
    assert hook_command(project, "status").startswith(
        f"Ralph loop (session {SESSION}): paused, iteration 1/9"
    )
    [info] = list_loops(str(project))
    assert (info.active, info.paused) == (False, True)


def test_list_loops_covers_sessions_pending_and_the_official_state(project):
    arm(str(project), "mine", session_id=SESSION)
    arm(str(project), "pending")
    legacy = project / ".claude" / "ralph-loop.local.md"
    legacy.parent.mkdir()
    legacy.write_text("---\nactive: true\niteration: 2\nmax_iterations: 5\n---\nold prompt\n")
    kinds = sorted((info.kind, info.active) for info in list_loops(str(project)))
    assert kinds == [("legacy", True), ("pending", True), ("session", True)]


def cli() -> typer.Typer:
    app = typer.Typer()
    app.command("cancel")(cancel_command)
    app.command("sessions")(sessions_command)
    return app


def test_ralphctl_sessions_lists_trackers_as_a_table_and_as_json(project):
    arm(str(project), "Fix the flaky tests", session_id=SESSION)
    runner = CliRunner()
    table = runner.invoke(cli(), ["sessions", "--project", str(project)], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert SESSION in table.output
    assert "Fix the flaky tests" in table.output
    listed = runner.invoke(cli(), ["sessions", "--project", str(project), "--json"])
    (info,) = json.loads(listed.output)
    assert (info["session_id"], info["active"], info["iteration"]) == (SESSION, True, 1)


def test_ralphctl_cancel_exits_1_when_there_is_nothing_to_cancel(project, monkeypatch):
    monkeypatch.setenv("RALPHCTL_HOOK_STORE", "off")
    runner = CliRunner()
    empty = runner.invoke(cli(), ["cancel", "--project", str(project)])
    assert (empty.exit_code, empty.output.strip()) == (1, NO_LOOP)
    arm(str(project), "Fix it", session_id=SESSION)
    done = runner.invoke(cli(), ["cancel", "--project", str(project), "--session", SESSION])
    assert done.exit_code == 0
    assert "was at iteration 1" in done.output
