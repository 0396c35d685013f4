"""What `ralphctl plugin install --agent codex` writes, run by the REAL pinned Codex CLI
(0.169.0) against the mock: a loop armed in the project (a pending tracker, as the arming
commands make one) is claimed by the session's first Stop and kept going by the installed hook
until the marker, once the user trusts the hook (the ``hooks.state`` entry the TUI's review
writes, with the hash ``codex_hooks`` computes) or runs ``--dangerously-bypass-hook-trust``.
Without either, Codex does not run it. Under ``--mode hook`` the installed hook and the run's
own both forward each Stop, which is decided once."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralphctl.agents.codex_hooks import hook_key, trusted_hash
from ralphctl.hook.arming import arm
from ralphctl.hook.paths import tracker_path
from ralphctl.hook.tracker import load
from ralphctl.plugin.installer import install
from ralphctl.plugin.layout import Interpreter
from ralphctl.plugin.scopes import Plan, Scope
from ralphctl.plugin.targets import target
from ralphctl.plugin.targets.codex import trust
from tests.agents.codex.harness import CodexRun, RealCodex, real_codex_session
from tests.agents.pinned import run_ralphctl
from tests.mockapi import Reply

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(120)]

DONE = "Done.\n<promise>COMPLETE</promise>"


@pytest.fixture
def codex(codex_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RealCodex]:
    """A real Codex whose home has ralphctl's hook installed at user scope."""
    with real_codex_session(codex_bin, tmp_path) as session:
        monkeypatch.setenv("CODEX_HOME", str(session.codex_home))
        install(target("codex").plan(Scope.USER, session.project, Interpreter(sys.executable), "t"))
        yield session


def trust_installed_hook(codex: RealCodex) -> None:
    """What the user's review of the hook records in their ``config.toml``."""
    hooks_file = codex.codex_home / "hooks.json"
    (wanted,) = user_plan(codex).settings[hooks_file]
    key, trusted = hook_key(str(hooks_file)), trusted_hash(wanted.value)
    with (codex.codex_home / "config.toml").open("a") as config:
        config.write(f'\n[hooks.state."{key}"]\ntrusted_hash = "{trusted}"\n')


def run_armed_loop(codex: RealCodex, *args: str) -> CodexRun:
    """Arm a loop in the project and run one ``codex exec`` with its prompt."""
    armed = arm(str(codex.project), "Write the notes.", max_iterations=5)
    codex.server.set_script(Reply("Working."), Reply(DONE))
    return codex.run(f"Write the notes.\n\n{armed.confirmation()}", *args)


def user_plan(codex: RealCodex) -> Plan:
    return target("codex").plan(Scope.USER, codex.project, Interpreter(sys.executable), "t")


def test_the_trusted_installed_hook_keeps_the_session_going_until_the_marker(codex):
    assert trust(user_plan(codex)) == "untrusted"
    trust_installed_hook(codex)
    assert trust(user_plan(codex)) == "trusted"

    run = run_armed_loop(codex)

    assert run.exit_code == 0, run.stderr
    assert len(codex.server.main_requests) == 2  # the hook blocked once, then allowed
    tracker = load(tracker_path(str(codex.project), run.thread_id))
    assert tracker is not None  # claimed by the session's first Stop
    assert (tracker.fields["active"], tracker.fields["ended_reason"]) == (False, "completion")
    assert tracker.fields["iteration"] == 2


def test_the_bypass_flag_runs_the_untrusted_installed_hook(codex):
    run = run_armed_loop(codex, "--dangerously-bypass-hook-trust")

    assert run.exit_code == 0, run.stderr
    assert len(codex.server.main_requests) == 2


def test_codex_does_not_run_the_installed_hook_before_it_is_trusted(codex):
    run = run_armed_loop(codex)

    assert run.exit_code == 0, run.stderr
    assert len(codex.server.main_requests) == 1
    assert load(tracker_path(str(codex.project), run.thread_id)) is None


def test_under_mode_hook_the_installed_hook_and_the_runs_own_decide_each_stop_once(codex):
    trust_installed_hook(codex)
    codex.server.set_script(Reply("Working (1)."), Reply("Working (2)."), Reply(DONE))
    database = codex.project.parent / "ralphctl.db"

    done = run_ralphctl(
        codex.env,
        codex.project,
        database,
        *("run", "--mode", "hook", "--agent", "codex", "--task", "Write the notes.", "--json"),
        timeout=90,
    )

    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["iterations"]) == ("completed", 3)
    assert len(codex.server.main_requests) == 3
