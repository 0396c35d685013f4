"""`ralphctl agents install`: an agent CLI into ralphctl's own prefix, verified, atomic.

Most tests run the install against stand-in npm and Python programs (tests/agents/installers);
the last asks the real npm for a version of the Codex CLI that does not exist. The real Codex
CLI is installed in tests/cli/test_agents_cmd.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ralphctl.agents import registry
from ralphctl.agents.executables import find_executable
from ralphctl.agents.install import (
    MANIFEST,
    InstallError,
    Tools,
    install,
    installed_agents,
    uninstall,
)
from ralphctl.agents.scripted import SPEC as SCRIPTED
from tests.agents.installers import MISSING, fake_npm, fake_python, spec

NPM_AGENT = spec("fakeagent", "npm", "@acme/fake-agent", "1.2.3", "fakeagent")
PYPI_AGENT = spec("fakeagent", "pypi", "fake-agent", "4.5.6", "fakeagent")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RALPHCTL_AGENTS_HOME", str(tmp_path / "agents"))
    monkeypatch.setenv("EXECUTABLE", "fakeagent")
    monkeypatch.delenv("VERSION_SHOWN", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no other `fakeagent`
    return tmp_path / "agents"


@pytest.fixture
def tools(tmp_path: Path) -> Tools:
    return Tools(npm=str(fake_npm(tmp_path / "tools")), python=str(fake_python(tmp_path / "tools")))


def visible(home: Path) -> list[str]:
    """Everything under ``home`` but its lock: what an install leaves behind."""
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.name != ".lock")


def test_an_npm_install_links_the_pinned_version_and_records_it(home: Path, tools: Tools) -> None:
    entry = install(NPM_AGENT, tools=tools)

    assert entry.version == "1.2.3"
    assert find_executable("fakeagent", "RALPHCTL_FAKEAGENT_BIN") == str(home / "bin" / "fakeagent")
    run = subprocess.run(
        [home / "bin" / "fakeagent", "--version"], capture_output=True, text=True, check=False
    )
    assert run.stdout.strip() == "fakeagent 1.2.3"
    recorded = json.loads((home / MANIFEST).read_text())["agents"]["fakeagent"]
    assert recorded["package"] == "@acme/fake-agent"
    assert recorded["registry"] == "npm"
    assert recorded["path"] == entry.path
    assert recorded["installed_at"].endswith("+00:00")


def test_a_pypi_install_gets_a_venv_of_its_own(home: Path, tools: Tools) -> None:
    entry = install(PYPI_AGENT, tools=tools)

    assert entry.command == Path(entry.path) / "venv" / "bin" / "fakeagent"
    assert (home / "bin" / "fakeagent").resolve() == entry.command
    assert installed_agents()["fakeagent"].version == "4.5.6"


def test_a_version_given_replaces_the_pinned_one(home: Path, tools: Tools) -> None:
    assert install(NPM_AGENT, version="2.0.0", tools=tools).version == "2.0.0"


def test_a_failed_install_leaves_nothing(home: Path, tools: Tools) -> None:
    with pytest.raises(InstallError, match="No matching version found"):
        install(NPM_AGENT, version=MISSING, tools=tools)

    assert visible(home) == ["installs", "installs/fakeagent"]
    assert installed_agents() == {}


def test_a_failed_upgrade_keeps_the_installed_version(home: Path, tools: Tools) -> None:
    before = install(NPM_AGENT, tools=tools)

    with pytest.raises(InstallError):
        install(NPM_AGENT, version=MISSING, tools=tools)

    assert installed_agents() == {"fakeagent": before}
    assert (home / "bin" / "fakeagent").resolve() == before.command
    assert [p.name for p in (home / "installs" / "fakeagent").iterdir()] == [Path(before.path).name]


def test_a_command_that_names_another_version_is_refused(
    home: Path, tools: Tools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERSION_SHOWN", "1.2.30")

    with pytest.raises(InstallError, match=r"printed 'fakeagent 1\.2\.30', not version 1\.2\.3"):
        install(NPM_AGENT, tools=tools)

    assert installed_agents() == {}
    assert not (home / "bin").exists()


def test_installing_the_installed_version_again_does_nothing(home: Path, tools: Tools) -> None:
    first = install(NPM_AGENT, tools=tools)

    assert install(NPM_AGENT, tools=tools) == first


def test_force_installs_again_and_removes_the_old_install(home: Path, tools: Tools) -> None:
    first = install(NPM_AGENT, tools=tools)

    second = install(NPM_AGENT, force=True, tools=tools)

    assert second.path != first.path
    assert not Path(first.path).exists()
    assert (home / "bin" / "fakeagent").resolve() == second.command


def test_a_new_version_replaces_the_old_one(home: Path, tools: Tools) -> None:
    old = install(NPM_AGENT, tools=tools)

    new = install(NPM_AGENT, version="1.3.0", tools=tools)

    assert not Path(old.path).exists()
    assert installed_agents() == {"fakeagent": new}


def test_an_install_whose_link_was_removed_is_made_again(home: Path, tools: Tools) -> None:
    first = install(NPM_AGENT, tools=tools)
    (home / "bin" / "fakeagent").unlink()

    again = install(NPM_AGENT, tools=tools)

    assert again.path != first.path
    assert (home / "bin" / "fakeagent").resolve() == again.command


def test_what_a_crashed_install_left_is_removed_by_the_next(home: Path, tools: Tools) -> None:
    leftover = home / "installs" / "fakeagent" / "1.2.3-deadbeef"
    (leftover / "node_modules").mkdir(parents=True)

    entry = install(NPM_AGENT, tools=tools)

    assert [p.name for p in leftover.parent.iterdir()] == [Path(entry.path).name]


def test_uninstall_reverts_the_install(home: Path, tools: Tools) -> None:
    entry = install(NPM_AGENT, tools=tools)

    assert uninstall("fakeagent") == entry

    assert not (home / "bin" / "fakeagent").exists()
    assert not Path(entry.path).exists()
    assert installed_agents() == {}
    assert find_executable("fakeagent", "RALPHCTL_FAKEAGENT_BIN") is None


def test_uninstalling_what_was_never_installed_says_so(home: Path) -> None:
    assert uninstall("fakeagent") is None


def test_without_npm_the_error_says_what_to_install(home: Path) -> None:
    with pytest.raises(InstallError, match=r"npm is not on PATH: install Node\.js"):
        install(NPM_AGENT, tools=Tools(npm=None, python="python3"))

    assert installed_agents() == {}


def test_an_agent_without_a_package_cannot_be_installed(home: Path) -> None:
    with pytest.raises(InstallError, match="not installed from a package registry"):
        install(SCRIPTED)


def test_a_corrupt_manifest_is_reported_not_overwritten(home: Path, tools: Tools) -> None:
    home.mkdir()
    (home / MANIFEST).write_text("{not json")

    with pytest.raises(InstallError, match="unreadable manifest"):
        install(NPM_AGENT, tools=tools)

    assert (home / MANIFEST).read_text() == "{not json"


# -- the real npm ---------------------------------------------------------------------------

needs_npm = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")


@needs_npm
def test_a_version_npm_does_not_have_leaves_nothing(home: Path) -> None:
    codex = registry.spec_for("codex")

    with pytest.raises(InstallError, match=r"ETARGET|No matching version"):
        install(codex, version="0.0.1-does-not-exist", tools=Tools.found())

    assert visible(home) == ["installs", "installs/codex"]
