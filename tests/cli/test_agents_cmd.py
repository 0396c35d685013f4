"""`ralphctl agents list | path | install | uninstall`, and a missing agent as a loop starts."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from ralphctl.agents import registry
from ralphctl.agents.install import installed_agents
from ralphctl.cli.app import app
from tests.agents.installers import MISSING, fake_npm, use_fake_agent


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "no-user-config.toml"))
    monkeypatch.setenv("RALPHCTL_DB", str(tmp_path / "ralphctl.db"))
    yield use_fake_agent(tmp_path, monkeypatch)
    registry.spec_for.cache_clear()


def ralphctl(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_install_then_path_then_uninstall(home: Path) -> None:
    installed = ralphctl("agents", "install", "fakeagent")
    assert installed.exit_code == 0, installed.output
    assert "Installed @acme/fake-agent 1.2.3 for ralphctl." in installed.output

    located = ralphctl("agents", "path", "fakeagent")
    assert located.exit_code == 0, located.output
    assert located.output.strip() == str(home / "bin" / "fakeagent")
    version = subprocess.run(
        [located.output.strip(), "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout.strip() == "fakeagent 1.2.3"

    removed = ralphctl("agents", "uninstall", "fakeagent")
    assert removed.exit_code == 0, removed.output
    assert "Uninstalled @acme/fake-agent 1.2.3." in removed.output
    assert ralphctl("agents", "path", "fakeagent").exit_code == 3


def test_installing_twice_says_it_is_there_already(home: Path) -> None:
    ralphctl("agents", "install", "fakeagent")

    again = ralphctl("agents", "install", "fakeagent")

    assert again.exit_code == 0
    assert "fakeagent 1.2.3 is installed already" in again.output


def test_install_a_given_version(home: Path) -> None:
    result = ralphctl("agents", "install", "fakeagent", "--version", "2.0.1")

    assert result.exit_code == 0, result.output
    assert installed_agents()["fakeagent"].version == "2.0.1"


def test_a_failed_install_exits_3_and_leaves_nothing(home: Path) -> None:
    result = ralphctl("agents", "install", "fakeagent", "--version", MISSING)

    assert result.exit_code == 3
    assert "No matching version found" in result.output
    assert installed_agents() == {}
    assert not (home / "bin").exists()


def test_path_of_a_missing_agent_gives_the_install_command(home: Path) -> None:
    result = ralphctl("agents", "path", "fakeagent")

    assert result.exit_code == 3
    assert "`fakeagent` not found; ralphctl agents install fakeagent" in result.output


def test_an_unknown_agent_is_a_usage_error(home: Path) -> None:
    result = ralphctl("agents", "install", "nosuchagent")

    assert result.exit_code == 2
    assert "unknown agent 'nosuchagent'" in result.output


def test_an_agent_without_a_package_is_not_installable(home: Path) -> None:
    result = ralphctl("agents", "install", "scripted")

    assert result.exit_code == 2
    assert "not installed from a package registry" in result.output


def test_list_shows_every_agent_with_its_capabilities_and_whereabouts(home: Path) -> None:
    ralphctl("agents", "install", "fakeagent")

    result = ralphctl("agents", "list", "--json")

    assert result.exit_code == 0, result.output
    agents = {entry["name"]: entry for entry in json.loads(result.output)}
    assert {"claude", "scripted", "fakeagent"} <= set(agents)
    fake = agents["fakeagent"]
    assert (fake["found"], fake["source"], fake["version"]) == (True, "ralphctl", "1.2.3")
    assert fake["tested_version"] is True
    assert fake["capabilities"]["permission_modes"] == ["acceptEdits"]
    assert agents["claude"]["package"]["name"] == "@anthropic-ai/claude-code"
    assert agents["claude"]["capabilities"]["cost"] == "reported"


def test_list_as_a_table(home: Path) -> None:
    result = ralphctl("agents", "list")

    assert result.exit_code == 0, result.output
    assert "fakeagent" in result.output
    assert "not found" in result.output


# -- the real npm, the real Codex CLI -------------------------------------------------------


REAL_NPM = shutil.which("npm")  # before a test puts a stand-in first on PATH


@pytest.mark.skipif(REAL_NPM is None, reason="npm is not installed")
def test_the_real_codex_cli_installs_from_npm_and_runs(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{Path(REAL_NPM or 'npm').parent}:/usr/bin:/bin")
    installed = ralphctl("agents", "install", "codex")
    assert installed.exit_code == 0, installed.output

    located = ralphctl("agents", "path", "codex")
    assert located.output.strip() == str(home / "bin" / "codex")
    version = subprocess.run(
        [located.output.strip(), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert version.stdout.strip() == "codex-cli 0.169.0"
    listed = {
        entry["name"]: entry for entry in json.loads(ralphctl("agents", "list", "--json").output)
    }
    assert (listed["codex"]["source"], listed["codex"]["tested_version"]) == ("ralphctl", True)


# -- a missing agent as a loop starts ---------------------------------------------------------


def test_run_without_the_agent_exits_3_with_the_command_to_type(home: Path, tmp_path: Path) -> None:
    result = ralphctl("run", "--agent", "fakeagent", "-C", str(tmp_path), "a task")

    assert result.exit_code == 3, result.output
    assert "ralphctl agents install fakeagent" in " ".join(result.output.split())
    assert installed_agents() == {}


def test_run_with_install_agent_installs_it_first(home: Path, tmp_path: Path) -> None:
    result = ralphctl(
        "run", "--agent", "fakeagent", "--install-agent", "-n", "1", "--cooldown", "0",
        "--checkpoint-interval", "0", "-C", str(tmp_path), "a task",
    )  # fmt: skip

    assert "installing @acme/fake-agent@1.2.3" in result.output
    assert installed_agents()["fakeagent"].version == "1.2.3"
    assert "ralphctl agents install" not in result.output


# -- on a terminal: asked -------------------------------------------------------------------


def on_terminal(argv: list[str], env: dict[str, str], answer: bytes) -> tuple[int, str]:
    """Run ``argv`` with stdin and stdout on a pseudo-terminal; ``answer`` the question it
    asks. Its exit code and everything it showed."""
    leader, follower = os.openpty()
    process = subprocess.Popen(
        argv, stdin=follower, stdout=follower, stderr=follower, env=env, start_new_session=True
    )
    os.close(follower)
    shown, answered, deadline = b"", False, time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the terminal closed: the process ended
                    break
                shown += chunk
            if not answered and b"[Y/n]" in shown:
                os.write(leader, answer)
                answered = True
            if process.poll() is not None and not ready:
                break
        return process.wait(timeout=10), shown.decode(errors="replace")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        os.close(leader)


@pytest.fixture
def codex_missing(tmp_path: Path) -> dict[str, str]:
    """An environment where the codex agent's CLI is missing and the stand-in npm installs a
    `codex` that says it is 0.169.0 (the pinned version)."""
    tools = tmp_path / "tools"
    fake_npm(tools)
    (tmp_path / "work").mkdir()
    return {
        **os.environ,
        "PATH": f"{tools}:/usr/bin:/bin",
        "EXECUTABLE": "codex",
        "RALPHCTL_AGENTS_HOME": str(tmp_path / "agents"),
        "RALPHCTL_CONFIG": str(tmp_path / "no-user-config.toml"),
        "RALPHCTL_DB": str(tmp_path / "ralphctl.db"),
        "RALPHCTL_CODEX_BIN": "",
        "COLUMNS": "200",
    }


def start_codex(tmp_path: Path) -> list[str]:
    work = str(tmp_path / "work")
    return [sys.executable, "-m", "ralphctl", "run", "--agent", "codex", "-n", "1", "-C", work, "x"]


def test_on_a_terminal_run_asks_and_no_leaves_the_agent_missing(
    tmp_path: Path, codex_missing: dict[str, str]
) -> None:
    code, shown = on_terminal(start_codex(tmp_path), codex_missing, b"n\n")

    assert "Install @openai/codex@0.169.0 for ralphctl now? [Y/n]" in shown
    assert code == 3
    assert "ralphctl agents install codex" in " ".join(shown.split())
    assert not (tmp_path / "agents" / "bin" / "codex").exists()


def test_on_a_terminal_yes_installs_the_agent_and_the_loop_runs(
    tmp_path: Path, codex_missing: dict[str, str]
) -> None:
    code, shown = on_terminal(start_codex(tmp_path), codex_missing, b"\n")  # the default: yes

    assert "installing @openai/codex@0.169.0" in shown
    assert (tmp_path / "agents" / "bin" / "codex").exists()
    assert "iteration" in shown.lower()  # the loop went on to run the installed command
    assert code in (1, 3)  # the stand-in is no real agent: its one iteration errs
