"""Each agent as found on this machine: where its CLI is, its version, its configuration —
offline, and fast even when a CLI is slow to say its version."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ralphctl.agents import registry
from ralphctl.agents.health import probe, probe_all
from ralphctl.agents.install import install
from ralphctl.agents.spec import Configuration
from tests.agents.installers import SPEC, use_fake_agent


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield use_fake_agent(tmp_path, monkeypatch)
    registry.spec_for.cache_clear()


def command(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_a_missing_cli_says_the_command_that_installs_it(home: Path) -> None:
    health = probe(SPEC, {}, home)

    assert not health.found
    assert health.problems() == [
        "fakeagent: `fakeagent` not found: ralphctl agents install fakeagent"
    ]
    assert health.to_json()["package"] == {
        "registry": "npm",
        "name": "@acme/fake-agent",
        "pinned": "1.2.3",
    }


def test_ralphctls_own_install_is_found_at_the_pinned_version(home: Path) -> None:
    install(SPEC)

    health = probe(SPEC, {}, home)

    assert (health.path, health.source) == (str(home / "bin" / "fakeagent"), "ralphctl")
    assert (health.version, health.tested_version) == ("1.2.3", True)
    assert health.problems() == []
    assert health.notes() == []


def test_a_cli_on_path_at_another_version_is_a_note_not_a_problem(
    home: Path, tmp_path: Path
) -> None:
    command(tmp_path / "tools" / "fakeagent", "echo 'fakeagent v1.3.0-beta.2 (build 7)'")

    health = probe(SPEC, {}, home)

    assert (health.source, health.version, health.tested_version) == ("PATH", "1.3.0-beta.2", False)
    assert health.problems() == []
    assert health.notes() == [
        "fakeagent: version 1.3.0-beta.2 found, ralphctl is tested with 1.2.3 "
        "(`ralphctl agents install fakeagent` installs that one for ralphctl)"
    ]


def test_a_bin_variable_that_names_nothing_is_a_problem_to_fix(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RALPHCTL_FAKEAGENT_BIN", "/nowhere/fakeagent")

    assert probe(SPEC, {}, home).problems() == [
        "fakeagent: $RALPHCTL_FAKEAGENT_BIN='/nowhere/fakeagent' is not an executable: "
        "fix or unset it"
    ]


def test_an_npm_package_says_its_version_without_being_run(home: Path, tmp_path: Path) -> None:
    package = tmp_path / "tools" / "node_modules" / "@acme" / "fake-agent"
    (package / "package.json").parent.mkdir(parents=True)
    (package / "package.json").write_text(
        json.dumps({"name": "@acme/fake-agent", "version": "1.2.3"})
    )
    script = command(package / "bin" / "cli.js", "sleep 30")
    (tmp_path / "tools" / "fakeagent").symlink_to(script)

    started = time.monotonic()
    health = probe(SPEC, {}, home)

    assert health.version == "1.2.3"
    assert time.monotonic() - started < 1.0


def test_a_cli_slow_to_answer_is_given_up_on(home: Path, tmp_path: Path) -> None:
    command(tmp_path / "tools" / "fakeagent", "sleep 30")

    started = time.monotonic()
    health = probe(SPEC, {}, home, timeout_s=0.3)

    assert time.monotonic() - started < 2.0
    assert health.found
    assert health.version is None
    assert health.version_note == "`--version` gave no answer within 0.3 s"


def test_every_agent_is_probed_at_once(home: Path, tmp_path: Path) -> None:
    specs = [replace(SPEC, name=f"agent{n}") for n in range(4)]
    command(tmp_path / "tools" / "fakeagent", "sleep 0.5; echo 1.2.3")

    started = time.monotonic()
    found = probe_all(specs, {}, home)

    assert [health.name for health in found] == ["agent0", "agent1", "agent2", "agent3"]
    assert all(health.version == "1.2.3" for health in found)
    assert time.monotonic() - started < 1.5  # four half-second CLIs, side by side


def test_the_configuration_is_checked_offline_with_the_given_environment(home: Path) -> None:
    def configured(env: object, _home: Path) -> Configuration:
        assert env == {"FAKE_KEY": "x"}
        return Configuration(False, "set $FAKE_KEY")

    spec = replace(SPEC, configured=configured)

    health = probe(spec, {"FAKE_KEY": "x"}, home)

    assert "fakeagent: set $FAKE_KEY" in health.problems()
    assert health.to_json()["configured"] is False


def test_an_agent_without_a_cli_of_its_own_is_always_found(home: Path) -> None:
    health = probe(registry.spec_for("scripted"), {}, home)

    assert health.found
    assert not health.external
    assert health.problems() == []
    assert health.to_json()["capabilities"]["cost"] == "reported"


def test_a_configuration_check_that_breaks_is_reported_not_raised(home: Path) -> None:
    def broken(_env: object, _home: Path) -> Configuration:
        raise KeyError("HOME")

    health = probe(replace(SPEC, configured=broken), {}, home)

    assert health.configuration == Configuration(
        False, "its configuration check failed: KeyError('HOME')"
    )
