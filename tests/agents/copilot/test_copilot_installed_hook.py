"""What `ralphctl plugin install --agent copilot` writes, run by the REAL pinned Copilot CLI
(1.0.102) against the mock: a loop armed for a session (as `ralphctl` arms one) is kept going
by the installed agentStop hook, headless (a piped prompt), until its bound or its marker.

The user scope's hook fires in every session; the project scope's only in a folder the user
trusted (the CLI's `trustedFolders` in its `config.json`).
"""

from __future__ import annotations

import json
import sys

import pytest

from ralphctl.hook.arming import arm
from ralphctl.hook.paths import tracker_path
from ralphctl.hook.tracker import load
from ralphctl.plugin.installer import install
from ralphctl.plugin.layout import Interpreter
from ralphctl.plugin.scopes import Plan, Scope
from ralphctl.plugin.targets import target
from tests.agents.copilot.harness import RealCopilot
from tests.mockapi import Reply

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(120)]

SESSION = "5e55a1d0-0000-4000-8000-0000000012c1"
DONE = "The notes are written.\n<promise>COMPLETE</promise>"


def installed(copilot: RealCopilot, scope: Scope, monkeypatch: pytest.MonkeyPatch) -> Plan:
    monkeypatch.setenv("HOME", str(copilot.home))  # the user scope is the CLI's home
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    plan = target("copilot").plan(scope, copilot.project, Interpreter(sys.executable), "test")
    install(plan)
    return plan


def tracker_fields(copilot: RealCopilot) -> dict[str, object]:
    tracker = load(tracker_path(str(copilot.project), SESSION))
    assert tracker is not None
    return dict(tracker.fields)


def run_session(copilot: RealCopilot) -> None:
    run = copilot.run("Write the notes.", "--session-id", SESSION, "--allow-all-tools")
    assert run.exit_code == 0, run.stderr


def test_the_user_hook_keeps_an_armed_session_going_to_max_iterations(real_copilot, monkeypatch):
    installed(real_copilot, Scope.USER, monkeypatch)
    arm(str(real_copilot.project), "Write the notes.", session_id=SESSION, max_iterations=3)
    served = len(real_copilot.server.main_requests)
    real_copilot.server.set_script(*[Reply(f"Working ({n}).") for n in range(1, 4)])

    run_session(real_copilot)

    assert len(real_copilot.server.main_requests) - served == 3  # two blocks, one session
    fields = tracker_fields(real_copilot)
    assert (fields["active"], fields["ended_reason"]) == (False, "max_iterations")
    third = real_copilot.server.main_requests[-1].messages
    assert "Working (1)." in json.dumps(third)  # one conversation, kept


def test_the_project_hook_runs_in_a_trusted_folder_and_ends_on_the_marker(
    real_copilot, monkeypatch
):
    installed(real_copilot, Scope.PROJECT, monkeypatch)
    config = real_copilot.home / ".copilot" / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"trustedFolders": [str(real_copilot.project)]}))
    arm(str(real_copilot.project), "Write the notes.", session_id=SESSION, max_iterations=5)
    served = len(real_copilot.server.main_requests)
    real_copilot.server.set_script(Reply("Working (1)."), Reply(DONE))

    run_session(real_copilot)

    assert len(real_copilot.server.main_requests) - served == 2
    fields = tracker_fields(real_copilot)
    assert (fields["active"], fields["ended_reason"]) == (False, "completion")


def test_the_project_hook_does_not_run_in_an_untrusted_folder(real_copilot, monkeypatch):
    installed(real_copilot, Scope.PROJECT, monkeypatch)
    arm(str(real_copilot.project), "Write the notes.", session_id=SESSION, max_iterations=5)
    served = len(real_copilot.server.main_requests)
    real_copilot.server.set_script(Reply("Working (1)."), Reply(DONE))

    run_session(real_copilot)

    assert len(real_copilot.server.main_requests) - served == 1
    assert tracker_fields(real_copilot)["active"] is True
