"""`ralphctl plugin install --agent gemini`: the AfterAgent hook in Gemini CLI's settings and
the custom commands, at user and project scope; uninstall restores everything as it was."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ralphctl.cli.plugin import app
from ralphctl.plugin.installer import install, uninstall
from ralphctl.plugin.scopes import Plan, Scope
from ralphctl.plugin.targets import AGENTS, TargetError, target
from tests.plugin.conftest import PYTHON, Homes, snapshot

USER_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
}
runner = CliRunner()


@pytest.fixture
def gemini_dir(homes: Homes, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's Gemini CLI config dir, through ``$GEMINI_CLI_HOME``."""
    monkeypatch.setenv("GEMINI_CLI_HOME", str(homes.root / "gemini-home"))
    return homes.root / "gemini-home" / ".gemini"


def gemini_plan(scope: Scope, homes: Homes) -> Plan:
    return target("gemini").plan(scope, homes.project, PYTHON, "1.2.3")


def test_the_user_scope_lives_in_the_cli_home_and_runs_the_hook_in_gemini_form(homes, gemini_dir):
    plan = gemini_plan(Scope.USER, homes)

    assert plan.agent == "gemini"
    assert plan.manifest == gemini_dir / "ralphctl-install.json"
    assert sorted(plan.files) == [
        gemini_dir / "commands" / name
        for name in ("cancel-ralph.toml", "ralph-loop.toml", "ralph-status.toml")
    ]
    ((settings, (wanted,)),) = plan.settings.items()
    assert (settings, wanted.path, wanted.append) == (
        gemini_dir / "settings.json",
        ("hooks", "AfterAgent"),
        True,
    )
    (hook,) = wanted.value["hooks"]
    assert (hook["name"], hook["timeout"]) == ("ralphctl", 30_000)
    assert hook["command"] == PYTHON.hook("stop", "--format", "gemini")
    assert plan.commands == ("/ralph-loop", "/cancel-ralph", "/ralph-status")


def test_the_project_scope_lives_in_the_projects_gemini_folder(homes, gemini_dir):
    plan = gemini_plan(Scope.PROJECT, homes)

    folder = homes.project / ".gemini"
    assert plan.manifest == folder / "ralphctl-install.local.json"
    assert set(plan.settings) == {folder / "settings.json"}
    assert all(path.parent == folder / "commands" for path in plan.files)


def test_the_loop_command_passes_the_raw_arguments_as_one_word_to_arm(homes, gemini_dir):
    files = {
        path.name: tomllib.loads(text)
        for path, text in gemini_plan(Scope.USER, homes).files.items()
    }

    loop = files["ralph-loop.toml"]
    assert loop["description"] == "Start a Ralph loop in this session (ralphctl)"
    block = loop["prompt"].splitlines()[0]
    assert block == f"!{{{PYTHON.module('ralphctl.plugin.arm', '--text')} {{{{args}}}}}}"
    assert "completion line" in loop["prompt"]
    assert files["cancel-ralph.toml"]["prompt"].startswith(
        f"!{{{PYTHON.module('ralphctl.hook', 'cancel')}}}"
    )
    assert files["ralph-status.toml"]["prompt"].startswith(
        f"!{{{PYTHON.module('ralphctl.hook', 'status')}}}"
    )


def test_install_keeps_the_users_settings_and_uninstall_restores_them_exactly(homes, gemini_dir):
    gemini_dir.mkdir(parents=True)
    (gemini_dir / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    before = snapshot(homes.root)
    plan = gemini_plan(Scope.USER, homes)

    install(plan)

    settings = json.loads((gemini_dir / "settings.json").read_text())
    assert settings["security"] == USER_SETTINGS["security"]
    groups = settings["hooks"]["AfterAgent"]
    assert groups[0] == USER_SETTINGS["hooks"]["AfterAgent"][0]
    assert groups[1]["hooks"][0]["name"] == "ralphctl"
    assert all(path.is_file() for path in plan.files)

    uninstall(plan)
    assert snapshot(homes.root) == before


def test_a_fresh_project_is_left_as_it_was(homes, gemini_dir):
    before = snapshot(homes.root)
    plan = gemini_plan(Scope.PROJECT, homes)
    install(plan)
    assert (homes.project / ".gemini" / "settings.json").is_file()
    uninstall(plan)
    assert snapshot(homes.root) == before


def test_the_cli_installs_reports_and_uninstalls_gemini(homes, gemini_dir):
    def plugin(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, list(args), env={"COLUMNS": "300"})
        return result.exit_code, " ".join(result.output.split())

    before = snapshot(homes.root)
    code, out = plugin("install", "--agent", "gemini")
    assert code == 0, out
    assert "Installed ralphctl's Gemini CLI integration (user scope)" in out
    assert "/ralph-loop, /cancel-ralph, /ralph-status" in out

    code, out = plugin("install", "--agent", "gemini", "--scope", "project")
    assert code == 2
    assert "already installed at user scope" in out
    assert "ralphctl plugin uninstall --agent gemini --scope user" in out

    result = runner.invoke(app, ["status", "--json", "--agent", "gemini"])
    user, project = json.loads(result.output)
    assert (user["agent"], user["scope"], user["installed"]) == ("gemini", "user", True)
    assert user["interpreter"] == sys.executable
    assert (project["installed"], project["problems"]) == (False, [])

    code, out = plugin("status")
    assert code == 0
    assert "Gemini CLI" in out
    assert "Claude Code" in out

    assert plugin("uninstall", "--agent", "gemini")[0] == 0
    assert snapshot(homes.root) == before


def test_an_agent_without_an_installer_is_a_clear_error():
    assert target("gemini").label == "Gemini CLI"
    assert "gemini" in AGENTS
    with pytest.raises(TargetError, match="no installer for agent 'vim'; known: claude, "):
        target("vim")
