"""What ``ralphctl doctor`` and ``ralphctl agents list`` say of each agent, found offline:
where its CLI is, its version against the pinned one, whether it is configured.

The version is read from the npm package the command belongs to when there is one (instant),
else from ``<command> --version`` with a short timeout; every agent is probed in its own
thread, so the slowest CLI sets the time (Gemini CLI's ``--version`` alone takes about 2 s).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralphctl.agents.bounded import TimedOut, run_bounded
from ralphctl.agents.executables import find_executable, managed_bin_dir
from ralphctl.agents.install import install_hint
from ralphctl.agents.spec import AgentSpec, Configuration

VERSION_TIMEOUT_S = 1.5
_VERSION = re.compile(r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?")
_PACKAGE_DEPTH = 6  # parents of a command searched for its package.json


@dataclass(frozen=True, slots=True)
class AgentHealth:
    """One agent as found on this machine. ``source`` says how its command was found:
    ``$RALPHCTL_<AGENT>_BIN``, ``ralphctl`` (its own install) or ``PATH``."""

    spec: AgentSpec
    path: str | None = None
    source: str | None = None
    version: str | None = None
    version_note: str | None = None  # why the version is unknown
    configuration: Configuration | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def external(self) -> bool:
        """Runs a CLI of its own (False: built into ralphctl, or needs no command)."""
        return self.spec.executable is not None

    @property
    def found(self) -> bool:
        return not self.external or self.path is not None

    @property
    def pinned(self) -> str | None:
        return self.spec.package.version if self.spec.package else None

    @property
    def tested_version(self) -> bool | None:
        """Whether the found version is the pinned one (None: nothing to compare)."""
        if self.version is None or self.pinned is None:
            return None
        return self.version == self.pinned

    def problems(self) -> list[str]:
        """What stops this agent from running a loop, each with the fix to type."""
        found: list[str] = []
        if not self.found:
            found.append(self._missing())
        if self.configuration is not None and not self.configuration.ok:
            found.append(f"{self.name}: {self.configuration.detail}")
        return found

    def notes(self) -> list[str]:
        """What is worth knowing but does not stop a loop."""
        if self.tested_version is False:
            return [
                f"{self.name}: version {self.version} found, ralphctl is tested with "
                f"{self.pinned} (`{install_hint(self.name)}` installs that one for ralphctl)"
            ]
        return []

    def _missing(self) -> str:
        bin_env = self.spec.bin_env or ""
        if configured := os.environ.get(bin_env):
            return f"{self.name}: ${bin_env}={configured!r} is not an executable: fix or unset it"
        if self.spec.package is not None:
            return f"{self.name}: `{self.spec.executable}` not found: {install_hint(self.name)}"
        return f"{self.name}: `{self.spec.executable}` not found on PATH (or set ${bin_env})"

    def to_json(self) -> dict[str, Any]:
        capabilities = self.spec.capabilities
        package = self.spec.package
        return {
            "name": self.name,
            "summary": self.spec.summary,
            "found": self.found,
            "path": self.path,
            "source": self.source,
            "version": self.version,
            "version_note": self.version_note,
            "package": None
            if package is None
            else {"registry": package.registry, "name": package.name, "pinned": package.version},
            "tested_version": self.tested_version,
            "configured": None if self.configuration is None else self.configuration.ok,
            "configuration": None if self.configuration is None else self.configuration.detail,
            "capabilities": {
                "fresh": capabilities.fresh,
                "same_session": capabilities.same_session,
                "resume": capabilities.resume,
                "cost": "reported" if capabilities.reports_cost else "estimated",
                "permission_modes": sorted(capabilities.permission_modes),
            },
            "problems": self.problems(),
            "notes": self.notes(),
        }


def probe_all(
    specs: Iterable[AgentSpec],
    env: Mapping[str, str],
    home: Path,
    *,
    timeout_s: float = VERSION_TIMEOUT_S,
) -> list[AgentHealth]:
    """Every agent of ``specs``, probed in parallel, in their order."""
    specs = list(specs)
    if not specs:
        return []
    with ThreadPoolExecutor(max_workers=len(specs)) as pool:
        return list(pool.map(lambda spec: probe(spec, env, home, timeout_s=timeout_s), specs))


def probe(
    spec: AgentSpec, env: Mapping[str, str], home: Path, *, timeout_s: float = VERSION_TIMEOUT_S
) -> AgentHealth:
    """One agent: its command, version and configuration (offline: the API is never called)."""
    configuration = _configuration(spec, env, home)
    if spec.executable is None or spec.bin_env is None:
        return AgentHealth(spec, configuration=configuration)
    path = find_executable(spec.executable, spec.bin_env)
    if path is None:
        return AgentHealth(spec, configuration=configuration)
    version, note = _version(path, spec, timeout_s)
    return AgentHealth(spec, path, _source(path, spec), version, note, configuration)


def _configuration(spec: AgentSpec, env: Mapping[str, str], home: Path) -> Configuration | None:
    """The agent's own offline check; one that breaks is reported, not raised: a doctor must
    finish its round."""
    if spec.configured is None:
        return None
    try:
        return spec.configured(env, home)
    except Exception as exc:  # any bug in one agent's check
        return Configuration(False, f"its configuration check failed: {exc!r}")


def _source(path: str, spec: AgentSpec) -> str:
    if spec.bin_env and os.environ.get(spec.bin_env):
        return f"${spec.bin_env}"
    if spec.executable and Path(path) == managed_bin_dir() / spec.executable:
        return "ralphctl"
    return "PATH"


def _version(path: str, spec: AgentSpec, timeout_s: float) -> tuple[str | None, str | None]:
    """The version of the command at ``path``, or None and why it is not known."""
    package = spec.package
    if (
        package is not None
        and package.registry == "npm"
        and (found := _npm_version(Path(path), package.name))
    ):
        return found, None
    try:
        done = run_bounded([path, "--version"], timeout_s=timeout_s)
    except TimedOut:
        return None, f"`--version` gave no answer within {timeout_s:g} s"
    except OSError as exc:
        return None, f"cannot run it ({exc.strerror})"
    match = _VERSION.search(done.stdout) or _VERSION.search(done.stderr)
    if match is None:
        return None, f"`--version` exited {done.returncode} without a version"
    return match.group(), None


def _npm_version(command: Path, package: str) -> str | None:
    """The version in the package.json of npm package ``package`` the command belongs to."""
    try:
        real = command.resolve(strict=True)
    except OSError:
        return None
    for parent in list(real.parents)[:_PACKAGE_DEPTH]:
        try:
            manifest = json.loads((parent / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(manifest, dict) and manifest.get("name") == package:
            version = manifest.get("version")
            return version if isinstance(version, str) else None
    return None
