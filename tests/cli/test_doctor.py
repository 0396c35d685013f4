"""`ralphctl doctor`: will my loop run? Exit 0 when the configured agent can run here, 1 with
the fix to type when it cannot."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from ralphctl.agents import registry
from ralphctl.agents.install import install
from ralphctl.cli.app import app
from ralphctl.store.repository import Store
from ralphctl.store.revision import HEAD_REVISION
from tests.agents.installers import SPEC, use_fake_agent


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "no-user-config.toml"))
    monkeypatch.setenv("RALPHCTL_DB", str(tmp_path / "ralphctl.db"))
    monkeypatch.setenv("RALPHCTL_SERVER_DIR", str(tmp_path / "no-server"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    yield use_fake_agent(tmp_path, monkeypatch)
    registry.spec_for.cache_clear()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def doctor(*args: str) -> Result:
    return CliRunner().invoke(app, ["doctor", *args], env={"COLUMNS": "200"})


def diagnosis(*args: str) -> tuple[int, dict[str, Any]]:
    result = doctor("--json", *args)
    return result.exit_code, json.loads(result.output)


def checks(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["name"]: check for check in report["checks"]}


def test_an_installed_agent_in_a_repository_is_ready(home: Path, repo: Path) -> None:
    install(SPEC)

    code, report = diagnosis("-C", str(repo), "--agent", "fakeagent")

    assert code == 0, report["problems"]
    assert report["ok"] is True
    assert report["agent"] == {"name": "fakeagent", "from": "--agent"}
    fake = next(agent for agent in report["agents"] if agent["name"] == "fakeagent")
    assert (fake["source"], fake["version"], fake["tested_version"]) == ("ralphctl", "1.2.3", True)
    found = checks(report)
    assert found["work dir"]["status"] == "ok"
    assert found["git"]["detail"].startswith("git version")
    assert found["database"]["detail"].endswith("created on first use")
    assert found["server"]["status"] == "info"
    assert "ralphctl" in found["python"]["detail"]


def test_a_missing_agent_fails_with_the_command_that_installs_it(home: Path, repo: Path) -> None:
    code, report = diagnosis("-C", str(repo), "--agent", "fakeagent")

    assert code == 1
    assert report["problems"] == [
        "fakeagent: `fakeagent` not found: ralphctl agents install fakeagent"
    ]


def test_the_configured_agent_is_the_one_judged(home: Path, repo: Path) -> None:
    (repo / "ralphctl.toml").write_text('[loops.defaults]\nagent = "fakeagent"\n')

    code, report = diagnosis("-C", str(repo))

    assert code == 1
    assert report["agent"] == {"name": "fakeagent", "from": "config"}


def test_an_unknown_agent_names_the_known_ones(home: Path, repo: Path) -> None:
    code, report = diagnosis("-C", str(repo), "--agent", "nosuch")

    assert code == 1
    assert report["problems"][0].startswith("unknown agent 'nosuch' (--agent); known agents: ")


def test_an_invalid_config_file_is_a_failure(home: Path, repo: Path) -> None:
    install(SPEC)
    (repo / "ralphctl.toml").write_text("[loops.defaults]\nmax_iterations = 0\n")

    code, report = diagnosis("-C", str(repo), "--agent", "fakeagent")

    assert code == 1
    assert checks(report)["config"]["status"] == "fail"
    assert "max_iterations" in report["problems"][0]


def test_a_database_that_is_not_ralphctls_is_a_failure(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    install(SPEC)
    (tmp_path / "notes.txt").write_text("not a database")

    code, report = diagnosis(
        "-C", str(repo), "--agent", "fakeagent", "--db", str(tmp_path / "notes.txt")
    )

    assert code == 1
    assert checks(report)["database"]["status"] == "fail"
    assert "is not a ralphctl database" in report["problems"][0]


def test_a_database_in_use_shows_its_migration_level(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    Store.open(str(tmp_path / "ralphctl.db")).close()

    _, report = diagnosis("-C", str(repo))

    assert checks(report)["database"]["detail"].endswith(f"migration {HEAD_REVISION} (current)")


def test_a_work_dir_outside_git_is_a_warning_not_a_failure(home: Path, tmp_path: Path) -> None:
    install(SPEC)
    plain = tmp_path / "plain"
    plain.mkdir()

    code, report = diagnosis("-C", str(plain), "--agent", "fakeagent")

    assert code == 0
    assert checks(report)["work dir"]["status"] == "warn"
    assert checks(report)["work dir"]["fix"].startswith(f"git -C {plain} init")


def test_the_screen_says_ready_or_what_to_type(home: Path, repo: Path) -> None:
    missing = doctor("-C", str(repo), "--agent", "fakeagent")
    install(SPEC)
    ready = doctor("-C", str(repo), "--agent", "fakeagent")

    assert missing.exit_code == 1
    assert "not ready: a loop of fakeagent (--agent) cannot run here" in missing.output
    assert "ralphctl agents install fakeagent" in missing.output
    assert ready.exit_code == 0
    assert "ready: a loop of fakeagent (--agent) can run here." in ready.output
    assert "ralphctl doctor" in ready.output  # the checks' table


def test_doctor_is_fast(home: Path, repo: Path) -> None:
    install(SPEC)

    started = time.monotonic()
    code, _ = diagnosis("-C", str(repo), "--agent", "fakeagent")

    assert code == 0
    assert time.monotonic() - started < 2.0


def test_the_plugin_checks_show_each_agents_install_state(
    home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from ralphctl.plugin.installer import install as install_plugin
    from ralphctl.plugin.layout import Interpreter
    from ralphctl.plugin.scopes import Scope
    from ralphctl.plugin.targets import target

    monkeypatch.setenv("GEMINI_CLI_HOME", str(home / "gemini-home"))
    gemini = target("gemini").plan(Scope.PROJECT, repo, Interpreter(sys.executable), "0")
    install_plugin(gemini)

    _, report = diagnosis("-C", str(repo), "--agent", "fakeagent")

    found = checks(report)
    assert found["claude plugin"]["status"] == "info"
    assert (
        found["claude plugin"]["fix"] == "ralphctl plugin install --agent claude [--scope project]"
    )
    assert found["gemini plugin (project)"] == {
        "name": "gemini plugin (project)",
        "status": "ok",
        "detail": f"installed, ralphctl 0 ({sys.executable}) in {repo / '.gemini'}",
        "fix": None,
    }
    assert "gemini plugin" not in found  # installed somewhere: no "not installed" line
    states = {(entry["agent"], entry["scope"]): entry["installed"] for entry in report["plugins"]}
    assert states[("gemini", "project")] is True
    assert states[("gemini", "user")] is False
    assert states[("claude", "user")] is False
