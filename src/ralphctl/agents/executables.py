"""Where an agent's executable is: ``$RALPHCTL_<AGENT>_BIN`` if set, else ralphctl's own
install (``ralphctl agents install``), else PATH."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ralphctl.agents.base import AgentUnavailable

AGENTS_HOME_ENV = "RALPHCTL_AGENTS_HOME"


def agents_home() -> Path:
    """The prefix ``ralphctl agents install`` installs into: ``$RALPHCTL_AGENTS_HOME``, else
    ``agents`` in ralphctl's user data dir."""
    if configured := os.environ.get(AGENTS_HOME_ENV):
        return Path(configured)
    from platformdirs import user_data_dir

    return Path(user_data_dir("ralphctl")) / "agents"


def managed_bin_dir() -> Path:
    """Where ralphctl's installs put their commands (one link per installed executable)."""
    return agents_home() / "bin"


def find_executable(executable: str, bin_env: str) -> str | None:
    """The path of ``executable``: ``$bin_env`` (a path or a command name) when set (and then
    only it), else ralphctl's managed install, else PATH; None when not found."""
    if configured := os.environ.get(bin_env):
        return shutil.which(configured)
    managed = managed_bin_dir() / executable
    if os.access(managed, os.X_OK) and managed.is_file():
        return str(managed)
    return shutil.which(executable)


def command_name(executable: str, bin_env: str) -> str:
    """The argv[0] of a run: the path :func:`find_executable` finds, else ``$bin_env`` as
    given, else the bare name (the process layer then reports it missing)."""
    return find_executable(executable, bin_env) or os.environ.get(bin_env) or executable


def require_executable(executable: str, bin_env: str, label: str, install_hint: str) -> str:
    """The path :func:`find_executable` finds; AgentUnavailable naming what was looked for
    (``label``: the agent's product name) and how to install it when there is none."""
    found = find_executable(executable, bin_env)
    if found is None:
        raise executable_not_found(bin_env, label, f"`{executable}` is not on PATH", install_hint)
    return found


def executable_not_found(
    bin_env: str, label: str, absent: str, install_hint: str
) -> AgentUnavailable:
    """The error for an agent whose executable is missing: ``$bin_env`` names no executable,
    or (unset) ``absent`` says what PATH lacks."""
    configured = os.environ.get(bin_env)
    problem = f"{bin_env}={configured!r} is not an executable file" if configured else absent
    return AgentUnavailable(f"{label} not found: {problem}; {install_hint}.")
