"""`ralphctl plugin install --agent codex`: the Stop hook in a Codex ``hooks.json`` at user and
project scope; uninstall restores everything as it was. The real CLI runs what was installed
in tests/agents/codex/test_codex_installed_hook.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.codex_hooks import hook_key, trusted_hash
from ralphctl.plugin.installer import install, uninstall
from ralphctl.plugin.scopes import Plan, Scope
from ralphctl.plugin.targets import target
from ralphctl.plugin.targets.codex import trust
from tests.plugin.conftest import PYTHON, Homes, snapshot

USER_HOOKS: dict[str, Any] = {
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}
}


@pytest.fixture
def codex_home(homes: Homes, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's Codex home, through ``$CODEX_HOME``."""
    home = homes.root / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def codex_plan(scope: Scope, homes: Homes) -> Plan:
    return target("codex").plan(scope, homes.project, PYTHON, "1.2.3")


def test_the_user_scope_appends_the_codex_form_hook_to_the_homes_hooks_json(homes, codex_home):
    plan = codex_plan(Scope.USER, homes)

    assert (plan.agent, plan.files, plan.commands) == ("codex", {}, ())
    assert plan.manifest == codex_home / "ralphctl-install.json"
    ((hooks_file, (wanted,)),) = plan.settings.items()
    assert (hooks_file, wanted.path, wanted.append) == (
        codex_home / "hooks.json",
        ("hooks", "Stop"),
        True,
    )
    (hook,) = wanted.value["hooks"]
    assert hook == {
        "type": "command",
        "command": PYTHON.hook("stop", "--format", "codex"),
        "timeout": 30,
    }


def test_the_project_scope_lives_in_the_projects_codex_folder(homes, codex_home):
    plan = codex_plan(Scope.PROJECT, homes)

    assert plan.manifest == homes.project / ".codex" / "ralphctl-install.local.json"
    assert list(plan.settings) == [homes.project / ".codex" / "hooks.json"]


def test_install_keeps_the_users_hooks_and_uninstall_restores_them_exactly(homes, codex_home):
    codex_home.mkdir()
    hooks_file = codex_home / "hooks.json"
    hooks_file.write_text(json.dumps(USER_HOOKS, indent=2) + "\n")
    before = snapshot(codex_home)
    plan = codex_plan(Scope.USER, homes)

    install(plan)

    groups = json.loads(hooks_file.read_text())["hooks"]["Stop"]
    assert groups[0] == USER_HOOKS["hooks"]["Stop"][0]
    assert groups[1]["hooks"][0]["command"] == PYTHON.hook("stop", "--format", "codex")
    install(plan)  # again: replaced, not added twice
    assert len(json.loads(hooks_file.read_text())["hooks"]["Stop"]) == 2

    uninstall(plan)

    assert snapshot(codex_home) == before


def test_a_project_install_into_a_fresh_project_leaves_nothing_after_uninstall(homes, codex_home):
    plan = codex_plan(Scope.PROJECT, homes)

    install(plan)
    written = json.loads((homes.project / ".codex" / "hooks.json").read_text())
    uninstall(plan)

    assert len(written["hooks"]["Stop"]) == 1
    assert not (homes.project / ".codex").exists()


def test_the_trust_state_reads_the_users_config_for_the_installed_hook(homes, codex_home):
    plan = codex_plan(Scope.USER, homes)
    assert trust(plan) == "not installed"
    install(plan)
    assert trust(plan) == "untrusted"
    ((hooks_file, (wanted,)),) = plan.settings.items()
    key = hook_key(str(hooks_file))
    config = codex_home / "config.toml"

    config.write_text(f'[hooks.state."{key}"]\ntrusted_hash = "{trusted_hash(wanted.value)}"\n')
    assert trust(plan) == "trusted"
    config.write_text(f'[hooks.state."{key}"]\ntrusted_hash = "sha256:0"\n')
    assert trust(plan) == "modified"
    config.write_text("hooks = 3\n")
    assert trust(plan) == "untrusted"
