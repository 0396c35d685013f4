"""The agent request of one iteration, from the loop's configuration."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ralphctl.agents.base import AgentAdapter, AgentRequest, AgentUnavailable
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.defaults import PERMISSION_MODE
from ralphctl.engine.sandboxing import check_sandbox

if TYPE_CHECKING:
    from ralphctl.engine.install_on_demand import Confirm, Notify

#: What a loop may ask that some agents cannot do: the setting (and capability), and why it is
#: ignored by an agent without it.
_OPTIONAL = {
    "temperature": "temperature is ignored: the {agent} agent has no temperature setting",
    "plugins": "plugins are ignored: the {agent} agent loads no plugins",
}


def ignored_settings(config: LoopConfig, adapter: AgentAdapter) -> list[str]:
    """Warnings, naming the agent, for each setting of ``config`` its agent cannot apply. An
    agent without permission modes (``Capabilities.permission_modes`` empty) runs under any
    mode: a mode other than the default is named as ignored, never refused."""
    warnings = [
        warning.format(agent=adapter.name)
        for setting, warning in _OPTIONAL.items()
        if getattr(config, setting) not in (None, ()) and not getattr(adapter.capabilities, setting)
    ]
    if not adapter.capabilities.permission_modes and config.permission_mode != PERMISSION_MODE:
        warnings.append(
            f"permission_mode {config.permission_mode} is ignored: the {adapter.name} agent has "
            "no permission modes (its own arguments decide what it may do)"
        )
    return warnings


def prompt_path(loop_id: str, iteration: int, session_id: str) -> Path:
    """Where an agent that reads its prompt from a file finds it: in the user's private runtime
    dir (``hookmode.sockets.runtime_dir``), outside the work tree so the agent cannot commit
    it. The process layer writes it for the run and deletes it after (``process.prompt_file``).
    """
    from ralphctl.engine.hookmode.sockets import runtime_dir

    return runtime_dir() / "prompts" / f"{loop_id}-{iteration}-{session_id}.md"


def agent_request(
    config: LoopConfig,
    *,
    prompt: str,
    workdir: Path,
    iteration: int,
    session_id: str,
    remaining_cost_usd: float | None,
    prompt_path: Path | None = None,
) -> AgentRequest:
    return AgentRequest(
        prompt=prompt,
        workdir=workdir,
        iteration=iteration,
        session_id=session_id,
        extra_args=tuple(config.agent_args),
        permission_mode=config.permission_mode,
        remaining_cost_usd=remaining_cost_usd,
        model=config.model,
        max_output_tokens=config.max_output_tokens,
        temperature=config.temperature,
        plugins=config.plugins,
        isolate_config=config.isolate_agent_config,
        prompt_path=prompt_path,
        sandboxed=config.sandbox,
    )


def check_agent_ready(
    adapter: AgentAdapter,
    config: LoopConfig,
    workdir: Path,
    *,
    confirm: Confirm | None = None,
    notify: Notify | None = None,
) -> None:
    """Raise AgentUnavailable if the agent cannot run this loop here: its CLI is missing, or
    something every run needs is (a plugin that is not installed, a sandbox that cannot be
    made here: SandboxUnavailable). Faces call it before the
    loop starts; a setting the adapter refuses is the dry run's and the first run's to say.

    A missing CLI that ralphctl can install is installed first when ``confirm`` (a face's
    question on a terminal) says yes or the loop's ``auto_install`` is set
    (``install_on_demand``)."""
    check_sandbox(config)
    try:
        adapter.check_available()
    except AgentUnavailable as missing:
        from ralphctl.engine.install_on_demand import install_missing

        install_missing(adapter.name, config, missing, confirm=confirm, notify=notify)
        adapter.check_available()
    request = agent_request(
        config,
        prompt="",
        workdir=workdir,
        iteration=1,
        session_id="<availability check>",
        remaining_cost_usd=None,
    )
    try:
        adapter.build_command(request)
    except ValueError as exc:
        if isinstance(exc, AgentUnavailable):  # a missing plugin is both
            raise
