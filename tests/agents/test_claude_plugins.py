"""A workflow's plugins in Claude's runs: enabled for the session, found installed, or a clear
error before anything runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from ralphctl.agents.base import AgentRequest, AgentUnavailable, StopHook
from ralphctl.agents.claude import ClaudeAdapter
from ralphctl.agents.claude_plugins import (
    PluginNotInstalled,
    installed_plugins,
    resolve_plugins,
)

INSTALLED = frozenset({"review@tools", "lint@tools", "lint@other"})


@pytest.fixture
def claude_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Claude Code config dir with two installed plugins and one enabled in settings."""
    home = tmp_path / "claude-home"
    (home / "plugins").mkdir(parents=True)
    listed = {"version": 2, "plugins": {"review@tools": [{"scope": "user"}], "lint@tools": []}}
    (home / "plugins" / "installed_plugins.json").write_text(json.dumps(listed))
    enabled = {"enabledPlugins": {"fmt@local": True, "off@local": False}}
    (home / "settings.json").write_text(json.dumps(enabled))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    return home


def argv(plugins: Sequence[str], *extra: str, hook: StopHook | None = None) -> list[str]:
    request = AgentRequest(
        prompt="Go.",
        workdir=Path("/w"),
        iteration=1,
        session_id="sess-1",
        extra_args=extra,
        plugins=tuple(plugins),
        stop_hook=hook,
    )
    return list(ClaudeAdapter().build_command(request).argv)


def settings_of(args: list[str]) -> dict[str, object]:
    layer: dict[str, object] = json.loads(args[args.index("--settings") + 1])
    return layer


def test_installed_means_listed_by_claude_code_or_turned_on_in_its_settings(claude_home):
    assert installed_plugins(claude_home) == {"review@tools", "lint@tools", "fmt@local"}


def test_the_older_flat_list_of_installed_plugins_is_read_too(tmp_path):
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "installed_plugins.json").write_text('{"review@tools": {}}')
    assert installed_plugins(tmp_path) == {"review@tools"}


def test_a_missing_or_corrupt_config_means_nothing_is_installed(tmp_path):
    assert installed_plugins(tmp_path / "nowhere") == frozenset()
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "installed_plugins.json").write_text("{not json")
    assert installed_plugins(tmp_path) == frozenset()


def test_a_bare_name_finds_its_plugin_when_only_one_marketplace_has_it():
    assert resolve_plugins(["review", "lint@other"], INSTALLED) == ("review@tools", "lint@other")


def test_every_missing_or_ambiguous_plugin_is_named_in_one_error():
    with pytest.raises(PluginNotInstalled) as caught:
        resolve_plugins(["lint", "deploy", "review@elsewhere"], INSTALLED)
    message = str(caught.value)
    assert "lint is ambiguous (lint@other, lint@tools): name its marketplace" in message
    assert "deploy is not installed (claude plugin install deploy)" in message
    assert "review@elsewhere is not installed" in message


def test_a_missing_plugin_is_both_an_unavailable_agent_and_a_bad_setting():
    with pytest.raises(AgentUnavailable):
        resolve_plugins(["deploy"], INSTALLED)
    with pytest.raises(ValueError, match="deploy"):
        resolve_plugins(["deploy"], INSTALLED)


@pytest.mark.usefixtures("claude_home")
def test_the_loops_plugins_are_enabled_by_a_settings_layer_for_the_run():
    args = argv(["review", "fmt@local"])
    assert settings_of(args) == {"enabledPlugins": {"review@tools": True, "fmt@local": True}}


@pytest.mark.usefixtures("claude_home")
def test_without_plugins_no_settings_layer_is_added():
    assert "--settings" not in argv([])


@pytest.mark.usefixtures("claude_home")
def test_a_same_session_run_enables_the_plugins_beside_its_stop_hook():
    hook = StopHook("python hook.py stop", 30, 4, disabled_plugins=("ralphctl@ralphctl",))
    layer = settings_of(argv(["review"], hook=hook))
    assert layer["enabledPlugins"] == {"review@tools": True, "ralphctl@ralphctl": False}
    assert "Stop" in layer["hooks"]  # type: ignore[operator]


@pytest.mark.usefixtures("claude_home")
def test_the_users_own_settings_flag_cannot_be_combined_with_plugins():
    with pytest.raises(ValueError, match="leave --settings out of the agent arguments"):
        argv(["review"], "--settings", "{}")


@pytest.mark.usefixtures("claude_home")
def test_a_run_needing_a_plugin_that_is_not_installed_is_refused_before_it_starts():
    with pytest.raises(PluginNotInstalled, match="deploy is not installed"):
        argv(["deploy"])
