"""The agent request of one iteration, from the loop's configuration."""

from __future__ import annotations

from pathlib import Path

from ralphctl.agents.base import AgentAdapter, AgentRequest, AgentUnavailable
from ralphctl.domain.config import LoopConfig

#: What a loop may ask that some agents cannot do: the setting (and capability), and why it is
#: ignored by an agent without it.
_OPTIONAL = {
    "temperature": "temperature is ignored: the {agent} agent has no temperature setting",
    "plugins": "plugins are ignored: the {agent} agent loads no plugins",
}


def ignored_settings(config: LoopConfig, adapter: AgentAdapter) -> list[str]:
    """Warnings, naming the agent, for each setting of ``config`` its agent cannot apply."""
    return [
        warning.format(agent=adapter.name)
        for setting, warning in _OPTIONAL.items()
        if getattr(config, setting) not in (None, ()) and not getattr(adapter.capabilities, setting)
    ]


def agent_request(
    config: LoopConfig,
    *,
    prompt: str,
    workdir: Path,
    iteration: int,
    session_id: str,
    remaining_cost_usd: float | None,
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
    )


def check_agent_ready(adapter: AgentAdapter, config: LoopConfig, workdir: Path) -> None:
    """Raise AgentUnavailable if the agent cannot run this loop here: its CLI is missing, or
    something every run needs is (a plugin that is not installed). Faces call it before the
    loop starts; a setting the adapter refuses is the dry run's and the first run's to say."""
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
