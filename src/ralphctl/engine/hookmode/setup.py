"""Everything ``ralphctl run --mode hook`` does before the session: check the options, arm
the tracker of a new session, create the loop; the terminal side is the CLI's."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ralphctl.agents.base import AgentAdapter, AgentCommand
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.defaults import CONTINUE_MESSAGE
from ralphctl.engine.hookmode.session import Session, reserved_args, session_command
from ralphctl.engine.hookmode.sockets import runtime_dir
from ralphctl.engine.loops import new_loop
from ralphctl.hook.arming import DEFAULT_TEMPLATE, Armed, ArmError, arm
from ralphctl.hook.tracker import load, update_fields
from ralphctl.store.records import LoopRecord

if TYPE_CHECKING:
    from ralphctl.store.repository import Store

#: Options of fresh mode that mean nothing in one long session (given: refused).
NOT_IN_HOOK_MODE = {
    "cooldown": "--cooldown",
    "checkpoint_interval": "--checkpoint-interval",
    "checkpoint_branch": "--checkpoint-branch",
    "iteration_timeout": "--iteration-timeout",
    "gates": "--gate",
    "max_calls_per_hour": "--max-calls-per-hour",
    "script": "--script",
}


class HookModeError(ValueError):
    """The run cannot be done in hook mode as asked; the message says why."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """A stored loop and its session, whose tracker is armed."""

    loop: LoopRecord
    session: Session


def fresh_only(settings: Mapping[str, Any]) -> list[str]:
    """The settings given (not None) that only fresh mode has."""
    return [key for key in NOT_IN_HOOK_MODE if settings.get(key) is not None]


def check(config: LoopConfig, flags: Mapping[str, Any]) -> None:
    """Refuse what hook mode cannot honour: fresh-only options, other agents, and agent
    arguments that would take the session or its settings out of the runner's hands."""
    given = [NOT_IN_HOOK_MODE[key] for key in fresh_only(flags)]
    if given:
        raise HookModeError(f"{', '.join(given)}: not available with --mode hook (one session)")
    if config.agent != "claude":
        raise HookModeError(f"--mode hook runs Claude Code only, not the {config.agent} agent")
    if reserved := reserved_args(config.agent_args):
        raise HookModeError(
            f"--agent-args {' '.join(reserved)}: --mode hook sets the session and its "
            "settings itself"
        )


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
    tracker's, or ``loop_id``, which then becomes the tracker's)."""
    session_id = str(uuid.uuid4())
    armed = _arm(root, task, session_id, config, workflow)
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


def _arm(root: Path, task: str, session_id: str, config: LoopConfig, workflow: str | None) -> Armed:
    continue_message, template = _workflow_loop(workflow)
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
            continue_message=continue_message,
            template=template,
        )
    except ArmError as exc:
        raise HookModeError(str(exc)) from None


def _workflow_loop(name: str | None) -> tuple[str, str]:
    """The workflow's continue message and tracker template (the defaults without one)."""
    if name is None:
        return CONTINUE_MESSAGE, DEFAULT_TEMPLATE
    from ralphctl.workflows.registry import resolve

    loop = resolve(name).loop
    return loop.continue_message, loop.tracker_template
