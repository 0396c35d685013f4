"""What hook mode needs before its session, for the loop-start service (``engine.starting``):
its checks (the agent's capabilities, agent arguments, fresh-only settings, ``clear_context``
only for an agent whose hook can clear the model's memory), arming the tracker of a new
session and storing its loop, and the session's command for ``--dry-run``."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ralphctl.agents.base import AgentAdapter, AgentCommand, AgentUnavailable
from ralphctl.agents.registry import same_session_agents
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.defaults import CONTINUE_MESSAGE
from ralphctl.engine.hookmode.session import Session, session_command
from ralphctl.engine.hookmode.sockets import runtime_dir
from ralphctl.engine.loops import new_loop
from ralphctl.hook.arming import DEFAULT_TEMPLATE, Armed, ArmError, arm
from ralphctl.hook.mapper import CLEARS_CONTEXT
from ralphctl.hook.tracker import load, update_fields
from ralphctl.store.records import LoopRecord

if TYPE_CHECKING:
    from ralphctl.store.repository import Store

#: Settings of fresh mode that mean nothing in one long session (given: refused).
FRESH_ONLY = (
    "cooldown",
    "checkpoint_interval",
    "checkpoint_branch",
    "iteration_timeout",
    "gates",
    "max_calls_per_hour",
    "script",
)


class HookModeError(ValueError):
    """The run cannot be done in hook mode as asked; the message says why."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """A stored loop and its session, whose tracker is armed."""

    loop: LoopRecord
    session: Session


def check_hook_mode(config: LoopConfig, adapter: AgentAdapter) -> None:
    """Refuse what hook mode cannot honour: an agent that cannot keep one session going
    (a Stop hook, and resuming the session when the agent ends it), and agent arguments that
    would take the session or its settings out of the runner's hands (the adapter's command
    says so)."""
    capabilities = adapter.capabilities
    if not (capabilities.same_session and capabilities.resume):
        why = f" ({capabilities.no_hook_mode_reason})" if capabilities.no_hook_mode_reason else ""
        raise HookModeError(
            f"hook mode keeps one session going through its Stop hook, which the "
            f"{adapter.name} agent cannot do{why}; agents that can: "
            f"{', '.join(same_session_agents())}"
        )
    if config.clear_context and adapter.name not in CLEARS_CONTEXT:
        raise HookModeError(
            f"clear_context: the {adapter.name} agent's hook cannot clear the model's memory; "
            f"agents that can: {', '.join(CLEARS_CONTEXT)}"
        )
    try:
        preview(adapter, config, Path.cwd())
    except AgentUnavailable:
        pass  # e.g. a plugin not installed: the availability check says so (check_agent_ready)
    except ValueError as exc:
        raise HookModeError(f"agent_args: {exc}") from None


def prepare(
    store: Store,
    adapter: AgentAdapter,
    task: str,
    root: Path,
    config: LoopConfig,
    *,
    name: str,
    workflow: str | None = None,
    loop_id: str | None = None,
) -> Prepared:
    """Arm the tracker of a new session and create its ``mode="hook"`` loop (same id: the
    tracker's, or ``loop_id``, which then becomes the tracker's). The session id is minted
    here; for an agent that names its sessions itself it is a placeholder until the runner
    adopts the agent's (``adoption``)."""
    session_id = str(uuid.uuid4())
    armed = _arm(root, task, session_id, config)
    if loop_id is not None:
        update_fields(armed.path, {"loop_id": loop_id})
    tracker = load(armed.path)
    assert tracker is not None, f"{armed.path} was just written"
    loop = new_loop(
        task,
        root,
        config,
        name=name,
        mode="hook",
        workflow=workflow,
        loop_id=str(tracker.fields["loop_id"]),
        agent=adapter.name,
        agent_session_id=session_id,
    )
    store.create_loop(loop)
    return Prepared(loop, Session(session_id, armed.path, first_prompt(task, armed)))


def first_prompt(task: str, armed: Armed) -> str:
    """The task, then how the loop works: the tracker, the bounds, the completion line."""
    return f"{task.rstrip()}\n\n---\n{armed.confirmation()}\n"


def preview(adapter: AgentAdapter, config: LoopConfig, root: Path) -> AgentCommand:
    """The session's command as ``--dry-run`` shows it (placeholders for what is made later)."""
    session = Session("<new session id>", "<tracker>", "")
    return session_command(
        adapter,
        session,
        config,
        prompt="",
        resume=False,
        iteration=1,
        remaining_cost_usd=config.max_cost_usd,
        socket_path=str(runtime_dir() / "<pid>-<loop id>.sock"),
        loop_id="<loop id>",
        workdir=root,
    )


def _arm(root: Path, task: str, session_id: str, config: LoopConfig) -> Armed:
    """Arm the session's tracker; a workflow's template and continue message come with its
    settings (``Workflow.loop_settings``)."""
    try:
        return arm(
            str(root),
            task,
            session_id=session_id,
            max_iterations=config.max_iterations,
            completion_signal=config.completion_signal,
            max_runtime_s=config.max_runtime,
            max_cost_usd=config.max_cost_usd,
            max_tokens=config.max_tokens,
            continue_message=config.continue_message or CONTINUE_MESSAGE,
            template=config.tracker_template or DEFAULT_TEMPLATE,
            clear_context=config.clear_context,
        )
    except ArmError as exc:
        raise HookModeError(str(exc)) from None
