"""The agent request of one iteration, from the loop's configuration."""

from __future__ import annotations

from pathlib import Path

from ralphctl.agents.base import AgentRequest
from ralphctl.domain.config import LoopConfig


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
    )
