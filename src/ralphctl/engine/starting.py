"""Starting a loop: the one service behind ``ralphctl run``, ``ralphctl loops start``,
``POST /api/loops`` and the manager. Faces parse and render; the rules live here.

A ``LoopRequest`` is what a face parsed: the task, the work dir, the settings it was given
(flags, an API body), a workflow, the mode. ``prepare_loop`` makes a ``LoopPlan`` of it: the
settings layers resolved (user file, project file, workflow, request), the workflow's prompt,
the agent's adapter, the mode checked against the adapter's capabilities, and a new pending
``LoopRecord``. Storing it is the caller's choice of moment (``store_loop``): ``ralphctl run``
lets its runner create the loop while the first agent starts (start-up budget), the manager
creates it at once. ``resume_plan`` (then ``attach_session``) makes the plan of a stored loop
that runs again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ralphctl.agents.base import AgentAdapter
from ralphctl.domain.config import AGENT_OPTIONS, LoopConfig
from ralphctl.domain.states import LoopStatus
from ralphctl.domain.workdirs import workdir_refusal
from ralphctl.engine.loops import default_name, new_loop
from ralphctl.settings import ConfigError, resolve_loop_config
from ralphctl.store.records import LoopRecord

if TYPE_CHECKING:  # the runners, hook mode and workflows are imported when used (start-up)
    from ralphctl.domain.conditions import ExternalSignal
    from ralphctl.engine.hookmode.runner import HookLoopRunner
    from ralphctl.engine.hookmode.session import Session
    from ralphctl.engine.runner import LoopObserver, LoopRunner, RunControl
    from ralphctl.store.repository import Store
    from ralphctl.workflows.model import Workflow

MODES = ("fresh", "hook")

AdapterFactory = Callable[[LoopConfig], AgentAdapter]


class InvalidSpec(ValueError):
    """A loop that cannot be started as asked (mode, task, work dir, agent, workflow…)."""


class FreshOnlySettings(InvalidSpec):
    """Hook mode was asked with settings only fresh mode has; ``names`` lists them."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        super().__init__(f"{', '.join(names)}: not available in hook mode (one session)")


class LoopAlreadyExists(RuntimeError):
    """An active loop already uses that work dir."""


@dataclass(frozen=True, slots=True)
class LoopRequest:
    """What to start. ``settings``: LoopConfig fields given by the face (None: not given);
    ``worktree``: run in a new git worktree beside ``workdir``."""

    task: str
    workdir: Path
    settings: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None
    mode: str = "fresh"
    workflow: str | None = None
    worktree: bool = False


@dataclass(frozen=True, slots=True)
class LoopPlan:
    """A loop ready to run: its record, configuration and agent, where each setting came from,
    and in hook mode its session (once armed by ``store_loop``)."""

    loop: LoopRecord
    config: LoopConfig
    adapter: AgentAdapter
    sources: Mapping[str, str] = field(default_factory=dict)
    session: Session | None = None


def default_adapter(config: LoopConfig) -> AgentAdapter:
    """The registry's adapter for ``config.agent``, made with the settings its spec takes
    (``AgentSpec.options``); ValueError for an unknown agent, or for an agent option
    (``AGENT_OPTIONS``) given to an agent that does not take it."""
    from ralphctl.agents.registry import adapter_for, spec_for

    taken = spec_for(config.agent).options
    given = {name: getattr(config, name) for name in config.field_names()}
    if stray := [name for name in AGENT_OPTIONS if given[name] is not None and name not in taken]:
        raise ValueError(f"{', '.join(stray)}: not a setting of the {config.agent} agent")
    options = {name: str(given[name]) for name in sorted(taken) if given.get(name) is not None}
    return adapter_for(config.agent, options=options)


def prepare_loop(request: LoopRequest, *, adapters: AdapterFactory = default_adapter) -> LoopPlan:
    """The plan of a new loop; InvalidSpec (or ConfigError) if it cannot be started as asked.

    Nothing is stored and the agent is not asked whether it can run: ``--dry-run`` shows a
    plan whatever the machine has (callers check ``engine.request.check_agent_ready``).
    """
    if request.mode not in MODES:
        raise InvalidSpec(f"mode {request.mode!r}: use fresh or hook")
    if not request.task.strip():
        raise InvalidSpec("the task is empty")
    workdir = request.workdir.expanduser().resolve()
    if not workdir.is_dir():
        raise InvalidSpec(f"work dir {request.workdir} is not a directory")
    given_dir = str(request.workdir.expanduser().absolute())
    if refusal := workdir_refusal(given_dir, str(workdir), str(Path.home())):
        raise InvalidSpec(refusal)
    given = {key: value for key, value in request.settings.items() if value is not None}
    task, layer = request.task, None
    if request.workflow is not None:
        flow = _workflow(request.workflow)
        task, layer = flow.render_prompt(request.task), _workflow_layer(request.workflow, flow)
    resolved = resolve_loop_config(workdir, given, extra=layer)
    adapter = _adapter(adapters, resolved.config)
    _check_mode(request.mode, resolved.config, given, adapter)
    loop = new_loop(
        task,
        workdir,
        resolved.config,
        name=request.name or default_name(request.task),
        mode=request.mode,
        workflow=request.workflow,
        agent=adapter.name,
    )
    return LoopPlan(loop, resolved.config, adapter, resolved.sources)


def resume_plan(
    loop: LoopRecord,
    settings: Mapping[str, Any] | None = None,
    *,
    adapters: AdapterFactory = default_adapter,
) -> LoopPlan:
    """The plan of a stored loop that runs again, its stored configuration under ``settings``
    (raised budgets); InvalidSpec if its configuration, work dir or agent is unusable. A
    hook-mode loop's session is attached last, once its agent is known to run
    (``attach_session``)."""
    given = {key: value for key, value in (settings or {}).items() if value is not None}
    try:
        resolved = resolve_loop_config(Path(loop.workdir), given, base=loop.config)
    except ConfigError as exc:
        raise InvalidSpec(str(exc)) from None
    if not Path(loop.workdir).is_dir():
        raise InvalidSpec(f"the loop's work dir {loop.workdir} no longer exists")
    if resolved.config.to_json() != loop.config:
        loop = replace(loop, config=resolved.config.to_json())
    return LoopPlan(loop, resolved.config, _adapter(adapters, resolved.config), resolved.sources)


def attach_session(plan: LoopPlan) -> LoopPlan:
    """A stored hook-mode loop's plan with its session: a new one if it has not run yet, the
    same one continued if it is paused (its tracker is made active again); InvalidSpec if
    neither. A fresh loop's plan is returned as it is."""
    if plan.loop.mode != "hook":
        return plan
    from ralphctl.engine.hookmode.managed import session_of
    from ralphctl.engine.hookmode.setup import HookModeError

    try:
        return replace(plan, session=session_of(plan.loop))
    except HookModeError as exc:
        raise InvalidSpec(str(exc)) from None


def check_free(store: Store, workdir: Path, except_id: str | None = None) -> None:
    """LoopAlreadyExists if an active loop (other than ``except_id``) works in ``workdir``."""
    other = active_loop_in(store, workdir, except_id)
    if other is not None:
        raise LoopAlreadyExists(
            f"loop {other.id} ({other.status}) already works in {workdir}: stop it, wait for "
            "it to end, or give the new loop a git worktree of its own (--worktree)"
        )


def active_loop_in(store: Store, workdir: Path, except_id: str | None = None) -> LoopRecord | None:
    """An active loop (other than ``except_id``) working in ``workdir``, if any."""
    active = [s for s in LoopStatus if s.is_active]
    found = store.list_loops(active, limit=2, workdir=str(workdir))
    return next((loop for loop in found if loop.id != except_id), None)


async def in_worktree(plan: LoopPlan) -> LoopPlan:
    """The plan moved to a new git worktree beside its work dir (its own branch)."""
    from ralphctl.engine.checkpoint import GitError
    from ralphctl.engine.worktree import add_worktree

    try:
        workdir = await add_worktree(Path(plan.loop.workdir), plan.loop.id)
    except GitError as exc:
        raise InvalidSpec(str(exc)) from None
    return replace(plan, loop=replace(plan.loop, workdir=str(workdir)))


def store_loop(store: Store, plan: LoopPlan) -> LoopPlan:
    """Create the loop in the store; in hook mode, arm its session's tracker first."""
    if plan.loop.mode != "hook":
        return replace(plan, loop=store.create_loop(plan.loop))
    from ralphctl.engine.hookmode.setup import HookModeError, prepare

    loop = plan.loop
    try:
        ready = prepare(
            store,
            plan.adapter,
            loop.task,
            Path(loop.workdir),
            plan.config,
            name=loop.name,
            workflow=loop.workflow,
            loop_id=loop.id,
        )
    except HookModeError as exc:
        raise InvalidSpec(str(exc)) from None
    return replace(plan, loop=ready.loop, session=ready.session)


def new_runner(
    store: Store | Callable[[], Store],
    plan: LoopPlan,
    *,
    observer: LoopObserver | None = None,
    control: RunControl | None = None,
    external: Callable[[], ExternalSignal | None] | None = None,
) -> LoopRunner | HookLoopRunner:
    """The plan's runner: its session's (hook mode) or a fresh-context one. A function for
    ``store`` (fresh mode only) opens the store while the first agent starts."""
    if plan.loop.mode == "hook" and plan.session is None:
        raise ValueError(f"hook-mode loop {plan.loop.id} has no session: attach_session first")
    if plan.session is None:
        from ralphctl.engine.runner import LoopRunner

        return LoopRunner(
            store,
            plan.adapter,
            plan.loop,
            plan.config,
            observer=observer,
            control=control,
            external=external,
        )
    from ralphctl.engine.hookmode.runner import HookLoopRunner

    assert not callable(store), "a hook-mode loop is stored when its session is armed"
    return HookLoopRunner(
        store,
        plan.adapter,
        plan.loop,
        plan.config,
        plan.session,
        observer=observer,
        control=control,
        external=external,
    )


def _check_mode(
    mode: str, config: LoopConfig, given: Mapping[str, Any], adapter: AgentAdapter
) -> None:
    modes = adapter.capabilities.permission_modes
    if modes and config.permission_mode not in modes:
        raise InvalidSpec(
            f"permission_mode {config.permission_mode!r}: the {adapter.name} agent takes "
            f"{', '.join(sorted(modes))}"
        )
    if mode == "fresh":
        if not adapter.capabilities.fresh:
            raise InvalidSpec(f"the {adapter.name} agent cannot run fresh-context loops")
        if given.get("clear_context"):
            raise InvalidSpec(
                "clear_context: for --mode hook (a fresh loop's every iteration "
                "starts with a fresh context)"
            )
        return
    from ralphctl.engine.hookmode.setup import FRESH_ONLY, HookModeError, check_hook_mode

    try:
        check_hook_mode(config, adapter)
    except HookModeError as exc:
        raise InvalidSpec(str(exc)) from None
    if names := [key for key in FRESH_ONLY if key in given]:
        raise FreshOnlySettings(names)


def _adapter(adapters: AdapterFactory, config: LoopConfig) -> AgentAdapter:
    try:
        return adapters(config)
    except ValueError as exc:
        raise InvalidSpec(str(exc)) from None


def _workflow(name: str) -> Workflow:
    from ralphctl.workflows.model import WorkflowError
    from ralphctl.workflows.registry import resolve

    try:
        return resolve(name)
    except WorkflowError as exc:
        raise InvalidSpec(str(exc)) from None


def _workflow_layer(name: str, flow: Workflow) -> tuple[str, dict[str, Any]]:
    """A workflow's loop settings, as a layer between the files and the request."""
    return f"workflow {name}", flow.loop_settings()
