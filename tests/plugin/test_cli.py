"""`ralphctl plugin …` as a user types it: output and exit codes."""

from __future__ import annotations

import json
import sys

from typer.testing import CliRunner

from ralphctl.cli.plugin import app
from ralphctl.plugin.installer import install
from ralphctl.plugin.layout import Interpreter
from ralphctl.plugin.scopes import project_plan
from tests.plugin.conftest import snapshot

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
