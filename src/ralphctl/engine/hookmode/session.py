"""The ``claude -p`` command of a hook-mode session: our Stop hook injected, nothing of the
user's touched.

- ``--settings '<json>'`` adds the Stop hook for this session only (the fast
  ``python -I -S …/hook/__main__.py stop`` form) and disables a user-scope ralphctl plugin,
  whose hook would otherwise count every stop a second time.
- ``RALPHCTL_HOOK_SOCKET`` tells the hook where the runner listens.
- ``CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`` is raised above the loop's bound, so that Claude Code
  does not end a run of text-only iterations after 8 blocks.
- The first run starts the session with ``--session-id``; later runs (after Claude Code ended
  the session itself, or after a pause) continue it with ``--resume``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ralphctl.agents.base import AgentAdapter, AgentCommand
from ralphctl.domain.config import LoopConfig
from ralphctl.engine.request import agent_request
from ralphctl.hook.handler import SOCKET_ENV
from ralphctl.plugin.layout import PLUGIN_ID, Interpreter, stop_hook

BLOCK_CAP_ENV = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"
#: ``agent_args`` that would take the session, or the hook, out of the runner's hands.
RESERVED_ARGS = ("--settings", "--session-id", "--resume", "-r", "--continue", "-c")


@dataclass(frozen=True, slots=True)
class Session:
    """One hook-mode session: its id, the loop's tracker and the prompt of its next run;
    ``resume``: the session has run before (a paused loop), the prompt continues it."""

    session_id: str
    tracker: str
    prompt: str
    resume: bool = False


def reserved_args(agent_args: Sequence[str]) -> list[str]:
    """The ``agent_args`` hook mode cannot accept (it sets them itself)."""
    return [arg for arg in agent_args if arg.partition("=")[0] in RESERVED_ARGS]


def settings_json(python: str = sys.executable) -> str:
    """The ``--settings`` layer: our Stop hook, and the ralphctl plugin off."""
    settings = {
        "hooks": {"Stop": [stop_hook(Interpreter(python))]},
        "enabledPlugins": {PLUGIN_ID: False},
    }
    return json.dumps(settings, separators=(",", ":"))


def block_cap(max_iterations: int, configured: str | None) -> str:
    """A block cap that lets ``max_iterations`` iterations run; a higher (or ``0``: none)
    value already in the environment is kept."""
    needed = max_iterations + 1
    try:
        current = int(configured or "")
    except ValueError:
        return str(needed)
    return str(current) if current == 0 or current >= needed else str(needed)


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
    ours = ["--settings", settings_json(), *(["--resume", session.session_id] if resume else [])]
    request = replace(request, extra_args=(*request.extra_args, *ours))
    command = adapter.build_command(request)
    env = {
        SOCKET_ENV: socket_path,
        BLOCK_CAP_ENV: block_cap(config.max_iterations, os.environ.get(BLOCK_CAP_ENV)),
        "RALPHCTL_LOOP_ID": loop_id,
    }
    return replace(command, env={**command.env, **env})
