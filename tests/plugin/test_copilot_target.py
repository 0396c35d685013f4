"""`ralphctl plugin install --agent copilot`: ralphctl's agentStop hook as a hook file of its
own, in the user's Copilot hooks dir or the project's `.github/hooks`; uninstall leaves every
tree as it was."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ralphctl.cli.plugin import app
from ralphctl.plugin.installer import InstallError, install, uninstall
from ralphctl.plugin.scopes import Plan, Scope
from ralphctl.plugin.targets import target
from tests.plugin.conftest import PYTHON, Homes, snapshot

USER_HOOK = {"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": "notify-send"}]}}
runner = CliRunner()


@pytest.fixture
def copilot_dir(homes: Homes, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's Copilot home, through ``$COPILOT_HOME``."""
    monkeypatch.setenv("COPILOT_HOME", str(homes.root / "copilot-home"))
    return homes.root / "copilot-home"


def copilot_plan(scope: Scope, homes: Homes) -> Plan:
    return target("copilot").plan(scope, homes.project, PYTHON, "1.2.3")


def test_the_user_scope_is_one_hook_file_in_the_cli_homes_hooks_dir(homes, copilot_dir):
    plan = copilot_plan(Scope.USER, homes)

    assert (plan.agent, plan.settings, plan.commands) == ("copilot", {}, ())
    assert plan.manifest == copilot_dir / "ralphctl-install.json"  # not read as a hook file
    ((path, text),) = plan.files.items()
    assert path == copilot_dir / "hooks" / "ralphctl.json"
    assert json.loads(text) == {
        "version": 1,
        "hooks": {
            "agentStop": [
                {
                    "type": "command",
                    "bash": PYTHON.hook("stop", "--format", "copilot"),
                    "timeoutSec": 30,
                }
            ]
        },
    }


def test_without_copilot_home_the_user_scope_is_in_the_home_folder(homes, monkeypatch):
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    (path,) = copilot_plan(Scope.USER, homes).files
    assert path == homes.root / "home" / ".copilot" / "hooks" / "ralphctl.json"


def test_the_project_scope_is_in_the_projects_github_hooks(homes, copilot_dir):
    plan = copilot_plan(Scope.PROJECT, homes)

    assert plan.manifest == homes.project / ".github" / "ralphctl-install.local.json"
    assert list(plan.files) == [homes.project / ".github" / "hooks" / "ralphctl.json"]


def test_install_keeps_the_users_hooks_and_uninstall_restores_them_exactly(homes, copilot_dir):
    (copilot_dir / "hooks").mkdir(parents=True)
    (copilot_dir / "hooks" / "notify.json").write_text(json.dumps(USER_HOOK))
    before = snapshot(homes.root)
    plan = copilot_plan(Scope.USER, homes)

    install(plan)

    assert sorted(p.name for p in (copilot_dir / "hooks").iterdir()) == [
        "notify.json",
        "ralphctl.json",
    ]
    assert json.loads((copilot_dir / "hooks" / "notify.json").read_text()) == USER_HOOK
    uninstall(plan)
    assert snapshot(homes.root) == before


def test_a_fresh_project_is_left_as_it_was(homes, copilot_dir):
    before = snapshot(homes.root)
    plan = copilot_plan(Scope.PROJECT, homes)

    install(plan)
    assert (homes.project / ".github" / "hooks" / "ralphctl.json").is_file()
    uninstall(plan)

    assert snapshot(homes.root) == before


def test_a_hook_file_of_the_users_own_name_is_not_overwritten(homes, copilot_dir):
    (copilot_dir / "hooks").mkdir(parents=True)
    (copilot_dir / "hooks" / "ralphctl.json").write_text(json.dumps(USER_HOOK))

    with pytest.raises(InstallError, match="already exists and was not written by ralphctl"):
        install(copilot_plan(Scope.USER, homes))


def test_the_cli_installs_reports_and_uninstalls_copilot(homes, copilot_dir):
    def plugin(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, list(args), env={"COLUMNS": "300"})
        return result.exit_code, " ".join(result.output.split())

    before = snapshot(homes.root)
    code, out = plugin("install", "--agent", "copilot")
    assert code == 0, out
    assert "Installed ralphctl's Copilot CLI integration (user scope)" in out

    result = runner.invoke(app, ["status", "--json", "--agent", "copilot"])
    user, project = json.loads(result.output)
    assert (user["agent"], user["scope"], user["installed"]) == ("copilot", "user", True)
    assert user["interpreter"] == sys.executable
    assert project["installed"] is False

    assert plugin("uninstall", "--agent", "copilot")[0] == 0
    assert snapshot(homes.root) == before
