"""What `ralphctl plugin install --agent gemini` writes, run by the REAL pinned Gemini CLI
(0.61.0) against the mock: `/ralph-loop` arms a loop through the installed command, and the
installed AfterAgent hook keeps the session going (headless here: `--approval-mode yolo`
lets the command's `!{…}` shell block run, which the CLI otherwise asks a human to allow).
"""

from __future__ import annotations

import json
import sys

import pytest

from ralphctl.hook.paths import tracker_path
from ralphctl.hook.tracker import load
from ralphctl.plugin.installer import install
from ralphctl.plugin.layout import Interpreter
from ralphctl.plugin.scopes import Plan, Scope
from ralphctl.plugin.targets import target
from tests.agents.gemini.harness import RealGemini
from tests.mockapi import Reply

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(120)]

SESSION = "5e55a1d0-0000-4000-8000-0000000012a1"
DONE = "The notes are written.\n<promise>COMPLETE</promise>"
#: A project's settings load only in a trusted folder; `--skip-trust` comes too late for them.
TRUSTED = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}


def installed(gemini: RealGemini, scope: Scope, monkeypatch: pytest.MonkeyPatch) -> Plan:
    monkeypatch.setenv("HOME", str(gemini.home))  # the user scope is the CLI's home
    plan = target("gemini").plan(scope, gemini.project, Interpreter(sys.executable), "test")
    install(plan)
    return plan


def tracker_fields(gemini: RealGemini) -> dict[str, object]:
    tracker = load(tracker_path(str(gemini.project), SESSION))
    assert tracker is not None
    return dict(tracker.fields)


def model_texts(request_contents: list[dict[str, object]]) -> str:
    return json.dumps([c for c in request_contents if c["role"] == "model"])


def test_the_project_command_arms_a_loop_the_hook_runs_to_max_iterations(gemini, monkeypatch):
    installed(gemini, Scope.PROJECT, monkeypatch)
    served = len(gemini.main_requests)
    gemini.server.set_script(*[Reply(f"Working ({n}).") for n in range(1, 4)])

    run = gemini.run(
        "/ralph-loop Write the notes --max-iterations 3",
        *("--session-id", SESSION, "--approval-mode", "yolo"),
        env=TRUSTED,
    )

    assert run.exit_code == 0, run.stderr
    assert len(gemini.main_requests) - served == 3
    blocked = [e["message"] for e in run.of_type("error") if e.get("severity") == "warning"]
    assert blocked == [
        "Agent execution blocked: Ralph iteration 2/3",
        "Agent execution blocked: Ralph iteration 3/3",
    ]
    fields = tracker_fields(gemini)
    assert (fields["active"], fields["ended_reason"]) == (False, "max_iterations")
    third = gemini.main_requests[-1].body["contents"]
    assert "Working (1)." in model_texts(third)  # one conversation, kept


def test_the_user_hook_ends_on_the_marker_and_clear_context_empties_the_memory(gemini, monkeypatch):
    installed(gemini, Scope.USER, monkeypatch)
    served = len(gemini.main_requests)
    gemini.server.set_script(Reply("Working (1)."), Reply(DONE))

    run = gemini.run(
        "/ralph-loop Write the notes --max-iterations 5 --clear-context",
        *("--session-id", SESSION, "--approval-mode", "yolo"),
    )

    assert run.exit_code == 0, run.stderr
    assert len(gemini.main_requests) - served == 2
    fields = tracker_fields(gemini)
    assert (fields["active"], fields["ended_reason"]) == (False, "completion")
    second = gemini.main_requests[-1].body["contents"]
    assert "Working (1)." not in model_texts(second)  # a fresh context, same session
