"""A loop's agent command, confined when the loop asks for it (``sandbox``, docs/safety.md).

Both loop modes pass every command through ``loop_command`` before they spawn it, so no agent
runs unconfined in a sandboxed loop: where no sandbox can be made, the run fails with
``SandboxUnavailable`` (an ``AgentUnavailable``: the loop stops and says why).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path, PurePosixPath

from ralphctl.agents.base import AgentAdapter, AgentCommand
from ralphctl.domain.config import LoopConfig

#: The neutral permission mode that lets the agent do anything (docs/safety.md).
BYPASS = "bypassPermissions"


def loop_command(
    command: AgentCommand, config: LoopConfig, workdir: Path, *, visible: tuple[Path, ...] = ()
) -> AgentCommand:
    """``command`` as the loop runs it: inside a sandbox when ``config.sandbox`` is set, with
    ``visible`` (e.g. the runner's socket a Stop hook calls) bound into it read-only."""
    if not config.sandbox:
        return command
    from ralphctl.agents.registry import spec_for
    from ralphctl.agents.sandbox import confine
    from ralphctl.agents.sandbox_host import host_sandbox

    sandbox = host_sandbox(
        spec_for(config.agent).sandbox_paths,
        workdir,
        argv=command.argv,
        network=config.sandbox_net == "allow",
        env={**os.environ, **command.env},  # what the agent sees: its $VAR paths
    )
    readable = sandbox.readable + tuple(PurePosixPath(os.path.realpath(p)) for p in visible)
    return confine(command, replace(sandbox, readable=readable))


def gate_confinement(config: LoopConfig, workdir: Path) -> Callable[[list[str]], list[str]] | None:
    """How a sandboxed loop runs its gates' command lines: in the same sandbox, without the
    agent's own paths (a gate runs the code the agent wrote). None: as they are."""
    if not config.sandbox:
        return None
    from ralphctl.agents.sandbox import bwrap_argv
    from ralphctl.agents.sandbox_host import host_sandbox

    def confine(argv: list[str]) -> list[str]:
        network = config.sandbox_net == "allow"
        return bwrap_argv(host_sandbox((), workdir, argv=argv, network=network), argv)

    return confine


def check_sandbox(config: LoopConfig) -> None:
    """SandboxUnavailable, before a loop starts, if it asks for a sandbox none can be made
    here."""
    if config.sandbox:
        from ralphctl.agents.sandbox_host import require

        require(network=config.sandbox_net == "allow")


def bypass_warning(config: LoopConfig, adapter: AgentAdapter) -> str | None:
    """The warning of a loop that lets its agent do anything outside a sandbox, or None."""
    mode = config.permission_mode
    if config.sandbox or mode != BYPASS or mode not in adapter.capabilities.permission_modes:
        return None
    return (
        f"permission_mode {BYPASS} without --sandbox: the {adapter.name} agent runs any "
        "command with your permissions, on all your files; add --sandbox (docs/safety.md)"
    )
