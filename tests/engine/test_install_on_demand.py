"""A missing agent CLI as a loop starts: installed when the user says yes or ``auto_install``
is set, else the loop does not start and the message gives the command to type."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ralphctl.agents import registry
from ralphctl.agents.base import AgentUnavailable
from ralphctl.agents.executables import find_executable
from ralphctl.agents.install import installed_agents
from ralphctl.domain.config import LoopConfig
from ralphctl.engine.install_on_demand import AgentNotInstalled
from ralphctl.engine.request import check_agent_ready
from tests.agents.installers import MISSING, use_fake_agent

PACKAGE = "@acme/fake-agent@1.2.3"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield use_fake_agent(tmp_path, monkeypatch)
    registry.spec_for.cache_clear()


class Asked:
    """A user at a terminal who answers ``answer`` and remembers the questions."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.questions: list[str] = []

    def __call__(self, question: str) -> bool:
        self.questions.append(question)
        return self.answer


def check(config: LoopConfig, tmp_path: Path, **faces: object) -> None:
    adapter = registry.adapter_for(config.agent)
    check_agent_ready(adapter, config, tmp_path, **faces)  # type: ignore[arg-type]


def test_unattended_without_auto_install_the_message_gives_the_command(
    home: Path, tmp_path: Path
) -> None:
    with pytest.raises(AgentNotInstalled) as raised:
        check(LoopConfig(agent="fakeagent"), tmp_path)

    message = str(raised.value)
    assert "fakeagent CLI not found" in message
    assert (
        f"ralphctl can install {PACKAGE} for itself: ralphctl agents install fakeagent" in message
    )
    assert "--install-agent" in message
    assert installed_agents() == {}


def test_auto_install_installs_the_pinned_cli_before_the_loop_starts(
    home: Path, tmp_path: Path
) -> None:
    told: list[str] = []

    check(LoopConfig(agent="fakeagent", auto_install=True), tmp_path, notify=told.append)

    assert installed_agents()["fakeagent"].version == "1.2.3"
    assert find_executable("fakeagent", "RALPHCTL_FAKEAGENT_BIN") == str(home / "bin" / "fakeagent")
    assert told[0] == f"installing {PACKAGE} …"
    assert told[1].startswith("installed fakeagent 1.2.3: ")


def test_on_a_terminal_the_user_is_asked_and_yes_installs(home: Path, tmp_path: Path) -> None:
    user = Asked(True)

    check(LoopConfig(agent="fakeagent"), tmp_path, confirm=user)

    assert user.questions == [
        f"The fakeagent agent's CLI is not installed. Install {PACKAGE} for ralphctl now?"
    ]
    assert "fakeagent" in installed_agents()


def test_on_a_terminal_no_leaves_it_missing(home: Path, tmp_path: Path) -> None:
    with pytest.raises(AgentNotInstalled, match="ralphctl agents install fakeagent"):
        check(LoopConfig(agent="fakeagent"), tmp_path, confirm=Asked(False))

    assert installed_agents() == {}


def test_an_installed_agent_is_never_asked_about(home: Path, tmp_path: Path) -> None:
    check(LoopConfig(agent="fakeagent", auto_install=True), tmp_path)
    user = Asked(False)

    check(LoopConfig(agent="fakeagent"), tmp_path, confirm=user)

    assert user.questions == []


def test_a_cli_the_user_named_is_theirs_to_fix(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RALPHCTL_FAKEAGENT_BIN", str(tmp_path / "nowhere"))
    user = Asked(True)

    with pytest.raises(AgentUnavailable, match="fakeagent CLI not found") as raised:
        check(LoopConfig(agent="fakeagent", auto_install=True), tmp_path, confirm=user)

    assert not isinstance(raised.value, AgentNotInstalled)
    assert user.questions == []
    assert installed_agents() == {}


def test_a_failed_install_fails_the_start_with_the_reason(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = registry.spec_for("fakeagent")
    assert spec.package is not None
    unpublished = replace(spec, package=replace(spec.package, version=MISSING))
    monkeypatch.setattr("tests.agents.installers.SPEC", unpublished)
    registry.spec_for.cache_clear()

    with pytest.raises(AgentUnavailable, match=f"installing @acme/fake-agent@{MISSING} failed"):
        check(LoopConfig(agent="fakeagent", auto_install=True), tmp_path)

    assert installed_agents() == {}


def test_an_agent_ralphctl_cannot_install_keeps_its_own_message(tmp_path: Path) -> None:
    config = LoopConfig(agent="scripted", script=str(tmp_path / "missing.json"), auto_install=True)
    adapter = registry.adapter_for("scripted", options={"script": str(tmp_path / "missing.json")})

    with pytest.raises(AgentUnavailable, match="scripted agent: script not found") as raised:
        check_agent_ready(adapter, config, tmp_path, confirm=Asked(True))

    assert not isinstance(raised.value, AgentNotInstalled)
