"""A missing agent CLI, installed as its loop is about to start: when the user says yes on a
terminal, or unattended when the loop's ``auto_install`` is set (``--install-agent``). Else
the loop does not start, and the message gives the command that installs it."""

from __future__ import annotations

import os
from collections.abc import Callable

from ralphctl.agents.base import AgentUnavailable
from ralphctl.agents.spec import AgentSpec
from ralphctl.domain.config import LoopConfig

#: Asks the user a yes/no question (a face's, on a terminal); True: go ahead.
Confirm = Callable[[str], bool]
#: Tells the user what is happening (an install takes seconds to minutes).
Notify = Callable[[str], None]


class AgentNotInstalled(AgentUnavailable):
    """The agent's CLI is missing and installing it was not allowed; the message says how."""


def install_missing(
    agent: str,
    config: LoopConfig,
    missing: AgentUnavailable,
    *,
    confirm: Confirm | None = None,
    notify: Notify | None = None,
) -> None:
    """Install ``agent``'s pinned CLI for ralphctl, or raise: ``missing`` itself when ralphctl
    cannot install it (no package, or ``$RALPHCTL_<AGENT>_BIN`` names the user's own),
    AgentNotInstalled when not allowed to, AgentUnavailable when the install failed."""
    spec = _installable(agent)
    if spec is None or spec.package is None:
        raise missing
    from ralphctl.agents.install import InstallError, install, install_hint

    wanted = f"{spec.package.name}@{spec.package.version}"
    question = f"The {agent} agent's CLI is not installed. Install {wanted} for ralphctl now?"
    if not config.auto_install and not (confirm is not None and confirm(question)):
        raise AgentNotInstalled(
            f"{missing}\nralphctl can install {wanted} for itself: {install_hint(agent)}"
            " (or pass --install-agent, or set auto_install = true in [loops.defaults])"
        )
    if notify is not None:
        notify(f"installing {wanted} …")
    try:
        installed = install(spec)
    except InstallError as exc:
        raise AgentUnavailable(f"installing {wanted} failed: {exc}") from None
    if notify is not None:
        notify(f"installed {agent} {installed.version}: {installed.command}")


def _installable(agent: str) -> AgentSpec | None:
    """The spec of ``agent`` when ralphctl may install its CLI."""
    from ralphctl.agents.registry import spec_for

    try:
        spec = spec_for(agent)
    except ValueError:  # an adapter the registry does not know (tests, embedding)
        return None
    if spec.bin_env and os.environ.get(spec.bin_env):
        return None  # the user named their own command: theirs to fix
    return spec
