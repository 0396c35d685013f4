"""The command of one run of a hook-mode session: our Stop hook injected through the
adapter (``AgentRequest.stop_hook``), nothing of the user's touched.

- The adapter installs the hook for this session only (Claude Code: a ``--settings`` layer
  with the fast ``python -I -S …/hook/__main__.py stop`` form, the user-scope ralphctl plugin
  off, whose hook would otherwise count every stop a second time) and lets it block the
  loop's bound of stops in a row.
- ``RALPHCTL_HOOK_SOCKET`` tells the hook where the runner listens.
- The first run starts the session with its id; later runs (after the agent ended the session
  itself, or after a pause) continue it (``AgentRequest.resume``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path

from ralphctl.agents.base import AgentAdapter, AgentCommand, StopHook
from ralphctl.domain.config import LoopConfig
from ralphctl.engine.request import agent_request
from ralphctl.engine.sandboxing import loop_command
from ralphctl.hook.handler import SOCKET_ENV
from ralphctl.plugin.layout import HOOK_TIMEOUT_S, PLUGIN_ID, Interpreter


@dataclass(frozen=True, slots=True)
class Session:
    """One hook-mode session: its id, the loop's tracker and the prompt of its next run;
    ``resume``: the session has run before (a paused loop), the prompt continues it."""

    session_id: str
    tracker: str
    prompt: str
    resume: bool = False


def stop_hook(max_iterations: int, python: str = sys.executable) -> StopHook:
    """Our Stop hook for a session of ``max_iterations`` iterations, the plugin's off."""
    return StopHook(
        command=Interpreter(python).hook("stop"),
        timeout_s=HOOK_TIMEOUT_S,
        max_blocks=max_iterations + 1,
        disabled_plugins=(PLUGIN_ID,),
    )


def session_command(
    adapter: AgentAdapter,
    session: Session,
    config: LoopConfig,
    *,
    prompt: str,
    resume: bool,
    iteration: int,
    remaining_cost_usd: float | None,
    socket_path: str,
    loop_id: str,
    workdir: Path,
) -> AgentCommand:
    """The command of one run of the session (the first, or a ``--resume``)."""
    request = agent_request(
        config,
        prompt=prompt,
        workdir=workdir,
        iteration=iteration,
        session_id=session.session_id,
        remaining_cost_usd=remaining_cost_usd,
    )
    request = replace(request, resume=resume, stop_hook=stop_hook(config.max_iterations))
    command = adapter.build_command(request)
    env = {SOCKET_ENV: socket_path, "RALPHCTL_LOOP_ID": loop_id}
    command = replace(command, env={**command.env, **env})
    return loop_command(command, config, workdir, visible=(Path(socket_path),))
