"""The versions ralphctl installs and says it is tested with are the ones the tests run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralphctl.agents.registry import all_specs, known_agents
from ralphctl.cli.loop_flags import AGENT

ROOT = Path(__file__).resolve().parents[2]
NPM_PINS: dict[str, str] = json.loads((ROOT / "package.json").read_text())["dependencies"]


@pytest.mark.parametrize(
    "spec", [s for s in all_specs() if s.package is not None], ids=lambda spec: spec.name
)
def test_each_agent_s_pinned_version_is_the_one_the_tests_install(spec) -> None:
    package = spec.package
    script = ROOT / "scripts" / f"ensure-{spec.name}"  # a CLI `npm ci` cannot install
    if package.registry == "npm" and not script.exists():
        assert NPM_PINS[package.name] == package.version
    else:
        pin = f'VERSION="${{RALPHCTL_{spec.name.upper()}_VERSION:-{package.version}}}"'
        assert pin in script.read_text()


def test_the_agent_flag_names_every_agent() -> None:
    for name in known_agents():
        assert name in AGENT.help
