"""`ralphctl plugin install --agent opencode`: ralphctl's OpenCode plugin and the custom
commands, at user and project scope; uninstall restores everything as it was."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ralphctl.cli.plugin import app
from ralphctl.plugin.installer import install, uninstall
from ralphctl.plugin.scopes import Plan, Scope
from ralphctl.plugin.targets import AGENTS, target
from tests.plugin.conftest import PYTHON, Homes, snapshot

runner = CliRunner()
COMMAND_FILES = ("cancel-ralph.md", "ralph-loop.md", "ralph-status.md")


@pytest.fixture
def opencode_dir(homes: Homes, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's OpenCode config folder, through ``$XDG_CONFIG_HOME``."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(homes.root / "xdg-config"))
    return homes.root / "xdg-config" / "opencode"


def opencode_plan(scope: Scope, homes: Homes) -> Plan:
    return target("opencode").plan(scope, homes.project, PYTHON, "1.2.3")


def plugin_text(plan: Plan) -> str:
    (plugin,) = [path for path in plan.files if path.suffix == ".js"]
    return plan.files[plugin]


def test_the_user_scope_puts_the_plugin_and_commands_in_the_global_config(homes, opencode_dir):
    plan = opencode_plan(Scope.USER, homes)

    assert (plan.agent, plan.settings) == ("opencode", {})
    assert plan.manifest == opencode_dir / "ralphctl-install.json"
    assert sorted(plan.files) == [
        *(opencode_dir / "commands" / name for name in COMMAND_FILES),
        opencode_dir / "plugins" / "ralphctl.js",
    ]
    assert plan.commands == ("/ralph-loop", "/cancel-ralph", "/ralph-status")


def test_the_project_scope_lives_in_the_projects_opencode_folder(homes, opencode_dir):
    plan = opencode_plan(Scope.PROJECT, homes)

    folder = homes.project / ".opencode"
    assert plan.manifest == folder / "ralphctl-install.local.json"
    assert {path.parent for path in plan.files} == {folder / "plugins", folder / "commands"}


def test_the_plugin_runs_the_hook_in_opencode_form_without_a_shell(homes, opencode_dir):
    text = plugin_text(opencode_plan(Scope.USER, homes))

    found = re.search(r"^const HOOK = (.*)$", text, re.M)
    assert found is not None
    argv = json.loads(found[1])
    assert argv == shlex.split(PYTHON.hook("stop", "--format", "opencode"))
    assert argv[0] == "/opt/my tools/venv/bin/python3"  # one word, spaces and all
    assert "const TIMEOUT_MS = 30000" in text
    assert "{{" not in text


def test_the_loop_command_sends_the_raw_arguments_through_a_quoted_heredoc(homes, opencode_dir):
    files = {path.name: text for path, text in opencode_plan(Scope.USER, homes).files.items()}

    loop = files["ralph-loop.md"]
    assert loop.startswith(
        '---\ndescription: "Start a Ralph loop in this session (ralphctl)"\n---\n'
    )
    arm = PYTHON.module("ralphctl.plugin.arm")
    assert f"!`{arm} <<'RALPHCTL_ARGUMENTS_END'\n$ARGUMENTS\nRALPHCTL_ARGUMENTS_END\n`" in loop
    assert "completion line" in loop
    assert f"!`{PYTHON.module('ralphctl.hook', 'cancel')}`" in files["cancel-ralph.md"]
    assert f"!`{PYTHON.module('ralphctl.hook', 'status')}`" in files["ralph-status.md"]


def test_install_keeps_the_users_plugins_and_uninstall_restores_them_exactly(homes, opencode_dir):
    (opencode_dir / "plugins").mkdir(parents=True)
    (opencode_dir / "plugins" / "notify.js").write_text("export const Notify = async () => ({})\n")
    (opencode_dir / "opencode.json").write_text('{"model": "anthropic/claude-sonnet-4-5"}\n')
    before = snapshot(homes.root)
    plan = opencode_plan(Scope.USER, homes)

    install(plan)

    assert all(path.is_file() for path in plan.files)
    assert (opencode_dir / "plugins" / "notify.js").is_file()
    uninstall(plan)
    assert snapshot(homes.root) == before


def test_a_fresh_project_is_left_as_it_was(homes, opencode_dir):
    before = snapshot(homes.root)
    plan = opencode_plan(Scope.PROJECT, homes)
    install(plan)
    assert (homes.project / ".opencode" / "plugins" / "ralphctl.js").is_file()
    uninstall(plan)
    assert snapshot(homes.root) == before


def test_the_cli_installs_reports_and_uninstalls_opencode(homes, opencode_dir):
    def plugin(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, list(args), env={"COLUMNS": "300"})
        return result.exit_code, " ".join(result.output.split())

    before = snapshot(homes.root)
    code, out = plugin("install", "--agent", "opencode")
    assert code == 0, out
    assert "Installed ralphctl's OpenCode integration (user scope)" in out
    assert "/ralph-loop, /cancel-ralph, /ralph-status" in out

    result = runner.invoke(app, ["status", "--json", "--agent", "opencode"])
    user, project = json.loads(result.output)
    assert (user["agent"], user["scope"], user["installed"]) == ("opencode", "user", True)
    assert user["interpreter"] == sys.executable
    assert project["installed"] is False

    assert plugin("uninstall", "--agent", "opencode")[0] == 0
    assert snapshot(homes.root) == before
    assert "opencode" in AGENTS
