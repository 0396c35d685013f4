"""Install writes exactly the plan; uninstall restores every file and setting as it was."""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ralphctl.plugin.installer import InstallError, install, installed, uninstall
from ralphctl.plugin.layout import Interpreter, command_files, plugin_tree, stop_hook
from ralphctl.plugin.manifest import Manifest
from ralphctl.plugin.scopes import Scope, project_plan, user_plan
from tests.plugin.conftest import PYTHON, Homes, snapshot

USER_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "enabledPlugins": {"other@market": True},
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
}
PROJECT_SETTINGS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(pytest:*)"]},
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./lint.sh"}]}]},
}


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def install_user() -> Manifest:
    return install(user_plan(PYTHON, "9.9"))


def install_project(homes: Homes) -> Manifest:
    return install(project_plan(homes.project, PYTHON, "9.9"))


# -- user scope ------------------------------------------------------------------------------


def test_user_install_writes_the_marketplace_and_enables_the_plugin(homes):
    write_json(homes.claude / "settings.json", USER_SETTINGS)
    manifest = install_user()
    expected = plugin_tree(PYTHON, "9.9")
    files = snapshot(homes.marketplace)
    assert {name: text for name, text in files.items() if text is not None} == {
        **expected,
        "ralphctl-install.json": json.dumps(manifest.to_json(), indent=2) + "\n",
    }
    assert read_json(homes.claude / "settings.json") == {
        **USER_SETTINGS,
        "enabledPlugins": {"other@market": True, "ralphctl@ralphctl": True},
        "extraKnownMarketplaces": {
            "ralphctl": {"source": {"source": "directory", "path": str(homes.marketplace)}}
        },
    }
    hooks = json.loads(files["ralphctl/hooks/hooks.json"] or "")
    assert hooks["hooks"]["Stop"][0]["hooks"][0]["command"].startswith(
        "'/opt/my tools/venv/bin/python3' -I -S "
    )


def test_user_uninstall_restores_the_home_exactly(homes):
    write_json(homes.claude / "settings.json", USER_SETTINGS)
    before = snapshot(homes.root)
    install_user()
    assert snapshot(homes.root) != before
    assert uninstall(user_plan(PYTHON, "9.9")) is not None
    assert snapshot(homes.root) == before


def test_user_uninstall_without_prior_settings_removes_the_file_and_folders_it_created(homes):
    before = snapshot(homes.root)
    install_user()
    assert (homes.claude / "settings.json").is_file()
    uninstall(user_plan(PYTHON, "9.9"))
    assert snapshot(homes.root) == before


def test_uninstall_forgets_the_marketplace_claude_code_recorded_from_ours(homes):
    known = homes.claude / "plugins" / "known_marketplaces.json"
    other = {"source": {"source": "github", "repo": "x/y"}}
    install_user()
    ours = {"source": {"source": "directory", "path": str(homes.marketplace)}, "lastUpdated": "t"}
    write_json(known, {"other": other, "ralphctl": ours})  # what a Claude Code session writes
    uninstall(user_plan(PYTHON, "9.9"))
    assert read_json(known) == {"other": other}


def test_user_install_registers_the_marketplace_as_claude_code_itself_records_it(homes):
    # Claude Code before 2.1.330 loads a marketplace's commands only once this record names
    # it: without it the first session after install answered "Unknown command".
    install_user()
    entry = read_json(homes.claude / "plugins" / "known_marketplaces.json")["ralphctl"]
    assert entry["source"] == {"source": "directory", "path": str(homes.marketplace)}
    assert entry["installLocation"] == str(homes.marketplace)
    assert datetime.fromisoformat(entry["lastUpdated"]).tzinfo is not None


def test_user_install_keeps_every_other_marketplace_claude_code_knows(homes):
    known = homes.claude / "plugins" / "known_marketplaces.json"
    other = {"source": {"source": "github", "repo": "x/y"}, "lastUpdated": "t"}
    write_json(known, {"other": other})
    install_user()
    assert set(read_json(known)) == {"other", "ralphctl"}
    uninstall(user_plan(PYTHON, "9.9"))
    assert read_json(known) == {"other": other}


@pytest.mark.parametrize("content", ["{not json", "[]"])
def test_an_unreadable_marketplace_record_is_an_error_and_nothing_is_written(homes, content):
    known = homes.claude / "plugins" / "known_marketplaces.json"
    known.parent.mkdir(parents=True)
    known.write_text(content)
    before = snapshot(homes.root)
    with pytest.raises(InstallError, match=r"known_marketplaces\.json"):
        install_user()
    assert snapshot(homes.root) == before


def test_a_marketplace_of_the_same_name_elsewhere_is_not_forgotten(homes):
    known = homes.claude / "plugins" / "known_marketplaces.json"
    theirs = {"ralphctl": {"source": {"source": "directory", "path": "/somewhere/else"}}}
    install_user()
    write_json(known, theirs)
    uninstall(user_plan(PYTHON, "9.9"))
    assert read_json(known) == theirs


def test_a_hand_formatted_settings_file_keeps_its_content_not_its_layout(homes):
    settings = homes.claude / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"model":"opus","env":{"A":"1"}}')
    install_user()
    uninstall(user_plan(PYTHON, "9.9"))
    assert read_json(settings) == {"model": "opus", "env": {"A": "1"}}
    assert settings.read_text() == '{\n  "model": "opus",\n  "env": {\n    "A": "1"\n  }\n}\n'


def test_settings_added_after_install_survive_uninstall(homes):
    write_json(homes.claude / "settings.json", USER_SETTINGS)
    install_user()
    settings = read_json(homes.claude / "settings.json")
    settings["enabledPlugins"]["new@market"] = True
    settings["theme"] = "dark"
    write_json(homes.claude / "settings.json", settings)
    uninstall(user_plan(PYTHON, "9.9"))
    assert read_json(homes.claude / "settings.json") == {
        **USER_SETTINGS,
        "enabledPlugins": {"other@market": True, "new@market": True},
        "theme": "dark",
    }


def test_a_plugin_the_user_had_disabled_is_disabled_again_after_uninstall(homes):
    settings = {"enabledPlugins": {"ralphctl@ralphctl": False}}
    write_json(homes.claude / "settings.json", settings)
    install_user()
    assert read_json(homes.claude / "settings.json")["enabledPlugins"]["ralphctl@ralphctl"]
    uninstall(user_plan(PYTHON, "9.9"))
    assert read_json(homes.claude / "settings.json") == settings


# -- project scope ---------------------------------------------------------------------------


def test_project_install_registers_the_hook_and_the_commands(homes):
    write_json(homes.project / ".claude" / "settings.local.json", PROJECT_SETTINGS)
    install_project(homes)
    claude = homes.project / ".claude"
    settings = read_json(claude / "settings.local.json")
    assert settings["permissions"] == PROJECT_SETTINGS["permissions"]
    assert settings["hooks"]["Stop"] == [*PROJECT_SETTINGS["hooks"]["Stop"], stop_hook(PYTHON)]
    for name, text in command_files(PYTHON).items():
        assert (claude / "commands" / name).read_text() == text
    assert sorted(p.name for p in claude.iterdir()) == [
        "commands",
        "ralphctl-install.local.json",
        "settings.local.json",
    ]


def test_project_uninstall_restores_the_project_exactly(homes):
    write_json(homes.project / ".claude" / "settings.local.json", PROJECT_SETTINGS)
    (homes.project / ".claude" / "commands").mkdir()
    (homes.project / ".claude" / "commands" / "deploy.md").write_text("Deploy it.")
    (homes.project / ".claude" / "settings.json").write_text('{"shared":true}')
    before = snapshot(homes.root)
    install_project(homes)
    uninstall(project_plan(homes.project, PYTHON, "9.9"))
    assert snapshot(homes.root) == before


def test_project_uninstall_in_a_project_without_claude_dir_leaves_none(homes):
    install_project(homes)
    uninstall(project_plan(homes.project, PYTHON, "9.9"))
    assert snapshot(homes.project) == {}


def test_a_file_the_user_put_in_a_folder_ralphctl_created_is_kept(homes):
    install_project(homes)
    mine = homes.project / ".claude" / "commands" / "mine.md"
    mine.write_text("My command.")
    uninstall(project_plan(homes.project, PYTHON, "9.9"))
    assert snapshot(homes.project) == {
        ".claude": None,
        ".claude/commands": None,
        ".claude/commands/mine.md": "My command.",
    }


def test_a_command_file_ralphctl_did_not_write_is_never_overwritten(homes):
    theirs = homes.project / ".claude" / "commands" / "ralph-loop.md"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("The official plugin's command, copied by hand.")
    before = snapshot(homes.root)
    with pytest.raises(InstallError, match=r"ralph-loop\.md already exists and was not written by"):
        install_project(homes)
    assert snapshot(homes.root) == before


# -- both scopes -----------------------------------------------------------------------------


@pytest.mark.parametrize("scope", list(Scope))
def test_reinstalling_is_idempotent(homes, scope):
    write_json(homes.claude / "settings.json", USER_SETTINGS)
    write_json(homes.project / ".claude" / "settings.local.json", PROJECT_SETTINGS)
    before = snapshot(homes.root)
    plan = (
        user_plan(PYTHON, "9.9")
        if scope is Scope.USER
        else project_plan(homes.project, PYTHON, "9.9")
    )
    install(plan)
    once = snapshot(homes.root)
    install(plan)
    assert snapshot(homes.root) == once
    uninstall(plan)
    assert snapshot(homes.root) == before


def test_reinstalling_with_another_interpreter_replaces_the_hook(homes):
    install_project(homes)
    moved = Interpreter("/usr/local/bin/python3.12")
    install(project_plan(homes.project, moved, "9.9"))
    settings = read_json(homes.project / ".claude" / "settings.local.json")
    assert settings["hooks"]["Stop"] == [stop_hook(moved)]
    record = installed(homes.project / ".claude" / "ralphctl-install.local.json")
    assert record is not None
    assert record.interpreter == moved.python


@pytest.mark.parametrize(
    ("scope", "content", "message"),
    [
        (Scope.USER, "{not json", "not valid JSON"),
        (Scope.USER, "[]", "settings must be a JSON object"),
        (Scope.USER, '{"enabledPlugins": true}', "enabledPlugins is not a JSON object"),
        (Scope.USER, '{"extraKnownMarketplaces": 1}', "extraKnownMarketplaces is not a JSON"),
        (Scope.PROJECT, "{not json", "not valid JSON"),
        (Scope.PROJECT, "null", "settings must be a JSON object"),
        (Scope.PROJECT, '{"hooks": []}', "hooks is not a JSON object"),
        (Scope.PROJECT, '{"hooks": {"Stop": {}}}', r"hooks\.Stop is not a JSON array"),
    ],
)
def test_malformed_settings_are_an_error_and_nothing_is_written(homes, scope, content, message):
    if scope is Scope.USER:
        settings, plan = homes.claude / "settings.json", user_plan(PYTHON, "9.9")
    else:
        settings = homes.project / ".claude" / "settings.local.json"
        plan = project_plan(homes.project, PYTHON, "9.9")
    settings.parent.mkdir(parents=True)
    settings.write_text(content)
    before = snapshot(homes.root)
    with pytest.raises(InstallError, match=message) as caught:
        install(plan)
    assert str(caught.value).startswith(f"{settings}: ")
    assert snapshot(homes.root) == before


def test_one_scope_is_refused_while_the_other_is_installed(homes):
    # Claude Code runs a plugin's Stop hook next to an identical settings hook: twice per stop.
    user, project = user_plan(PYTHON, "9.9"), project_plan(homes.project, PYTHON, "9.9")
    install(user, exclusive_with=[project])
    before = snapshot(homes.root)
    with pytest.raises(InstallError, match=r"already installed at user scope .* count every stop"):
        install(project, exclusive_with=[user])
    assert snapshot(homes.root) == before
    uninstall(user)
    install(project, exclusive_with=[user])
    with pytest.raises(InstallError, match="uninstall --scope project"):
        install(user, exclusive_with=[project])


def test_uninstall_with_settings_broken_since_changes_nothing(homes):
    install_user()
    (homes.claude / "settings.json").write_text("{oops")
    before = snapshot(homes.root)
    with pytest.raises(InstallError, match="not valid JSON"):
        uninstall(user_plan(PYTHON, "9.9"))
    assert snapshot(homes.root) == before


def test_uninstall_when_nothing_is_installed_does_nothing(homes):
    before = snapshot(homes.root)
    assert uninstall(user_plan(PYTHON, "9.9")) is None
    assert uninstall(project_plan(homes.project, PYTHON, "9.9")) is None
    assert snapshot(homes.root) == before


def test_a_corrupt_manifest_is_reported_not_guessed_at(homes):
    install_user()
    (homes.marketplace / "ralphctl-install.json").write_text('{"format": 1}')
    with pytest.raises(InstallError, match="malformed installation record"):
        uninstall(user_plan(PYTHON, "9.9"))


def test_settings_keep_their_file_permissions(homes):
    settings = homes.claude / "settings.json"
    write_json(settings, USER_SETTINGS)
    os.chmod(settings, 0o600)
    install_user()
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
