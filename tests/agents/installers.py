"""Stand-ins for npm and for the Python that makes a venv, as real executables: each installs a
command that prints ``<name> <version>`` for ``--version``, the way the real ones install an
agent's CLI. A version starting with ``0.0.0-missing`` is one the registry does not have."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal

import pytest

from ralphctl.agents import registry
from ralphctl.agents.base import AgentCommand, AgentRequest, AgentUnavailable, Capabilities
from ralphctl.agents.claude_stream import ClaudeStreamParser
from ralphctl.agents.executables import find_executable
from ralphctl.agents.spec import AgentSpec, Package

MISSING = "0.0.0-missing"

#: Writes an executable that answers ``--version`` with ``VERSION_SHOWN`` (an env var, else
#: the version installed): a CLI that lies about its version is possible too.
_COMMAND = """\
import os, sys
from pathlib import Path

def command(path: Path, name: str, version: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    shown = os.environ.get("VERSION_SHOWN", version)
    path.write_text(f"#!/bin/sh\\necho '{name} {shown}'\\n")
    path.chmod(0o755)

def missing(version: str) -> None:
    if version.startswith("MISSING"):
        print(f"error notarget No matching version found for {version}")
        sys.exit(1)
""".replace("MISSING", MISSING)

_NPM = (
    _COMMAND
    + """
args = sys.argv[1:]
prefix = Path(args[args.index("--prefix") + 1])
name, _, version = args[-1].rpartition("@")
missing(version)
exe = os.environ["EXECUTABLE"]
command(prefix / "node_modules" / ".bin" / exe, exe, version)
"""
)

_PYTHON = (
    _COMMAND
    + """
args = sys.argv[1:]
me = Path(sys.argv[0])
if args[:2] == ["-m", "venv"]:
    venv = Path(args[2])
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(me.read_text())
    python.chmod(0o755)
elif args[:3] == ["-m", "pip", "install"]:
    name, _, version = args[-1].partition("==")
    missing(version)
    exe = os.environ["EXECUTABLE"]
    command(me.parent / exe, exe, version)
else:
    sys.exit(f"unexpected arguments {args}")
"""
)


def fake_npm(directory: Path) -> Path:
    return _program(directory / "npm", _NPM)


def fake_python(directory: Path) -> Path:
    return _program(directory / "python", _PYTHON)


def _program(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return path


class FakeCliAdapter:
    """An adapter for the command the stand-ins install: available when that command is found."""

    capabilities = Capabilities(permission_modes=frozenset({"acceptEdits"}))

    def __init__(self, name: str) -> None:
        self.name = name

    def check_available(self) -> None:
        if self._path() is None:
            raise AgentUnavailable(f"{self.name} CLI not found: `{self.name}` is not on PATH")

    def build_command(self, request: AgentRequest) -> AgentCommand:
        return AgentCommand(argv=[self._path() or self.name], stdin=request.prompt.encode())

    def new_parser(self) -> ClaudeStreamParser:
        return ClaudeStreamParser()

    def _path(self) -> str | None:
        return find_executable(self.name, f"RALPHCTL_{self.name.upper()}_BIN")


def spec(
    name: str, registry: Literal["npm", "pypi"], package: str, version: str, executable: str
) -> AgentSpec:
    """An agent spec for tests whose CLI the stand-ins install."""
    return AgentSpec(
        name=name,
        summary=f"{name} (test)",
        make=lambda _options: FakeCliAdapter(name),
        parser=ClaudeStreamParser,
        capabilities=FakeCliAdapter.capabilities,
        executable=executable,
        bin_env=f"RALPHCTL_{name.upper()}_BIN",
        package=Package(registry, package, version, executable),
    )


#: What the registry finds when a test adds this module as agent ``fakeagent``.
SPEC = spec("fakeagent", "npm", "@acme/fake-agent", "1.2.3", "fakeagent")


def use_fake_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make ``fakeagent`` a known agent, not installed, with the stand-in npm on PATH and
    ralphctl's installs under ``tmp_path``; the agents home."""
    tools = tmp_path / "tools"
    fake_npm(tools)
    home = tmp_path / "agents"
    monkeypatch.setenv("RALPHCTL_AGENTS_HOME", str(home))
    monkeypatch.setenv("EXECUTABLE", "fakeagent")
    monkeypatch.delenv("VERSION_SHOWN", raising=False)
    monkeypatch.delenv("RALPHCTL_FAKEAGENT_BIN", raising=False)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setitem(registry._MODULES, "fakeagent", __name__)
    registry.spec_for.cache_clear()
    return home
