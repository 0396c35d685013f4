"""`ralphctl plugin …` as a user types it: output and exit codes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ralphctl import __version__
from ralphctl.agents.codex_hooks import hook_key, trusted_hash
from ralphctl.cli.plugin import app
from ralphctl.engine.doctor import diagnose
from ralphctl.plugin.installer import install
from ralphctl.plugin.layout import Interpreter
from ralphctl.plugin.scopes import Scope, project_plan
from ralphctl.plugin.targets import target
from tests.plugin.conftest import Homes, snapshot

runner = CliRunner()


def plugin(*args: str):
    result = runner.invoke(app, list(args), env={"COLUMNS": "300"})
    return result.exit_code, " ".join(result.output.split())


def test_user_install_status_uninstall(homes):
    before = snapshot(homes.root)
    code, out = plugin("install")
    assert code == 0
    assert "Installed ralphctl's Claude Code integration (user scope)" in out
    assert "/ralphctl:ralph-loop, /ralphctl:cancel-ralph, /ralphctl:ralph-status" in out

    code, out = plugin("status", "--project", str(homes.project))
    assert code == 0
    assert "user: installed, ralphctl" in out
    assert f"interpreter: {sys.executable}" in out
    assert "registered with Claude Code: yes" in out
    assert "project: not installed" in out

    assert plugin("uninstall") == (
        0,
        "Uninstalled ralphctl's Claude Code integration (user scope).",
    )
    assert snapshot(homes.root) == before
    code, out = plugin("uninstall")
    assert code == 0
    assert "Nothing to uninstall" in out


def test_project_install_and_status_json(homes):
    code, out = plugin("install", "--scope", "project", "--project", str(homes.project))
    assert code == 0
    assert "/ralph-loop, /cancel-ralph, /ralph-status" in out
    assert "out of version control" in out
    result = runner.invoke(
        app, ["status", "--json", "--agent", "claude", "--project", str(homes.project)]
    )
    user, project = json.loads(result.output)
    assert user["installed"] is False
    assert project == {
        "agent": "claude",
        "scope": "project",
        "installed": True,
        "manifest": str(homes.project / ".claude" / "ralphctl-install.local.json"),
        "commands": ["/ralph-loop", "/cancel-ralph", "/ralph-status"],
        "version": project["version"],
        "interpreter": sys.executable,
        "registered": None,
        "trust": None,
        "problems": [],
    }


def test_status_reports_missing_files(homes):
    plugin("install", "--scope", "project", "--project", str(homes.project))
    (homes.project / ".claude" / "commands" / "ralph-status.md").unlink()
    code, out = plugin("status", "--project", str(homes.project))
    assert code == 0
    assert "problem: missing:" in out
    assert "ralph-status.md" in out


def test_errors_exit_2_and_change_nothing(homes):
    (homes.claude).mkdir(parents=True)
    (homes.claude / "settings.json").write_text("{broken")
    before = snapshot(homes.root)
    code, out = plugin("install")
    assert code == 2
    assert "settings.json: not valid JSON" in out
    assert snapshot(homes.root) == before
    code, out = plugin("install", "--project", str(homes.project))
    assert (code, out) == (2, "error: --project applies to --scope project only")
    code, out = plugin("install", "--scope", "project", "--project", str(homes.root / "nope"))
    assert code == 2
    assert "not a directory" in out
    assert plugin("install", "--scope", "global")[0] == 2


def test_both_scopes_at_once_are_refused_and_flagged(homes):
    assert plugin("install")[0] == 0
    code, out = plugin("install", "--scope", "project")
    assert code == 2
    assert "already installed at user scope" in out
    install(project_plan(homes.project, Interpreter(sys.executable), "0"))
    code, out = plugin("status")
    assert out.count("problem: also installed at") == 2


@pytest.fixture
def codex_home(homes: Homes, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = homes.root / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def trust_the_user_hook(codex_home: Path, recorded: str | None = None) -> None:
    """What the Codex TUI records once the user has reviewed the hook of ``hooks.json``: its
    hash (``recorded``: another one, of a hook reviewed before it changed)."""
    plan = target("codex").plan(Scope.USER, Path.cwd(), Interpreter(sys.executable), "0")
    ((hooks_file, (wanted,)),) = plan.settings.items()
    recorded = recorded or trusted_hash(wanted.value)
    (codex_home / "config.toml").write_text(
        f'[hooks.state."{hook_key(str(hooks_file))}"]\ntrusted_hash = "{recorded}"\n'
    )


def test_codex_status_says_whether_codex_trusts_the_installed_hook(homes, codex_home):
    plugin("install", "--agent", "codex")

    code, out = plugin("status", "--agent", "codex")
    assert code == 0
    assert f"user: installed, ralphctl {__version__} ({codex_home})" in out
    assert f"interpreter: {sys.executable}" in out
    assert "trusted by Codex CLI: untrusted" in out
    assert "problem: the CLI has not trusted the hook yet" in out

    trust_the_user_hook(codex_home)
    code, out = plugin("status", "--agent", "codex")
    assert "trusted by Codex CLI: trusted" in out
    assert "problem" not in out

    trust_the_user_hook(codex_home, "sha256:0")
    result = runner.invoke(app, ["status", "--json", "--agent", "codex"])
    user, project = json.loads(result.output)
    assert (user["trust"], project["trust"]) == ("modified", None)  # the project: not installed
    assert user["problems"] == [
        "the hook changed since the CLI trusted it, so it does not run: start the CLI and "
        "review it again"
    ]


def test_doctor_shows_where_which_ralphctl_and_codexs_trust(homes, codex_home):
    plugin("install", "--agent", "codex")
    trust_the_user_hook(codex_home)

    checks = {check.name: check for check in diagnose(homes.project, db=None, agent=None).checks}

    check = checks["codex plugin (user)"]
    assert check.status == "ok"
    assert check.detail == (
        f"installed, ralphctl {__version__} ({sys.executable}) in {codex_home}, trusted by "
        "Codex CLI"
    )
    (codex_home / "config.toml").unlink()
    check = {c.name: c for c in diagnose(homes.project, db=None, agent=None).checks}[
        "codex plugin (user)"
    ]
    assert (check.status, check.fix) == (
        "warn",
        "start Codex CLI and review the hook it asks about",
    )
