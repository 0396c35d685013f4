"""``LoopManager``: many loops in one process, with a concurrency limit.

Each running loop is a runner task: a ``LoopRunner`` (fresh context) or a ``HookLoopRunner``
(one Claude Code session kept going by its Stop hook; paused, the session is continued by the
next runner, and once it ended otherwise it cannot be entered again: ``docs/manager.md``).
Beyond ``max_concurrent`` new loops wait as
pending and start first-come first-served as slots free. Every state change is validated by
the state machine (``IllegalTransition`` otherwise), stored, then published to subscribers.
The database is the memory: a manager that crashes or shuts down is replaced by a new one
whose ``start()`` picks up where it stood (``engine/reconcile``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ralphctl.agents.base import AgentAdapter, AgentUnavailable
from ralphctl.domain.conditions import ExternalSignal
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.events import EventType
from ralphctl.domain.states import LoopStatus, StopReason, transition
from ralphctl.engine.bus import EventBus, Subscription
from ralphctl.engine.checkpoint import GitError
from ralphctl.engine.control import (
    UnsupportedControl,
    check_resumable,
    clear_sentinels,
    runner_alive,
    settle,
    write_sentinel,
)
from ralphctl.engine.hookmode.managed import session_of
from ralphctl.engine.hookmode.runner import HookLoopRunner
from ralphctl.engine.hookmode.session import Session
from ralphctl.engine.hookmode.setup import HookModeError, check, prepare
from ralphctl.engine.loops import default_name, new_loop
from ralphctl.engine.reconcile import reconcile
from ralphctl.engine.runner import Interruption, LoopRunner, RunControl
from ralphctl.engine.sentinels import read_sentinel
from ralphctl.engine.worktree import add_worktree
from ralphctl.settings import ConfigError, LoopsSettings, resolve_loop_config
from ralphctl.store.errors import StoreError
from ralphctl.store.records import EventRecord, LoopRecord
from ralphctl.store.retention import prune_events

if TYPE_CHECKING:
    from ralphctl.agents.events import AgentEvent
    from ralphctl.store.repository import Store
    from ralphctl.workflows.model import Workflow

__all__ = [
    "ConcurrencyLimitReached",
    "InvalidSpec",
    "LoopAlreadyExists",
    "LoopManager",
    "LoopSpec",
    "Stats",
    "Subscription",
    "UnsupportedControl",
]

RETENTION_INTERVAL_S = 60.0
MODES = ("fresh", "hook")
_CONTROLLABLE = (LoopStatus.RUNNING, LoopStatus.RATE_LIMITED)


class ConcurrencyLimitReached(RuntimeError):
    """``max_concurrent`` loops already run and the caller asked not to queue."""


class LoopAlreadyExists(RuntimeError):
    """An active loop already uses that work dir."""


class InvalidSpec(ValueError):
    """A loop that cannot be started as specified (work dir, agent, workflow, worktree)."""


@dataclass(frozen=True, slots=True)
class LoopSpec:
    """What to run. ``worktree=True`` runs it in a new git worktree beside ``workdir``."""

    task: str
    workdir: Path
    config: LoopConfig
    name: str | None = None
    mode: str = "fresh"
    workflow: str | None = None
    worktree: bool = False


@dataclass(frozen=True, slots=True)
class Stats:
    """Loops active, running and paused now; cost, iterations and tokens of every loop."""

    total_active: int
    running: int
    paused: int
    total_cost: float
    total_iterations: int
    total_tokens: int


@dataclass(frozen=True, slots=True)
class _Plan:
    """How to run a stored loop: its configuration, its agent and, in hook mode, its session."""

    config: LoopConfig
    adapter: AgentAdapter
    session: Session | None = None


@dataclass
class _Running:
    """A loop this manager runs: its task, its controls, the request its runner reads next."""

    workdir: Path
    control: RunControl
    started: asyncio.Event
    task: asyncio.Task[None] | None = None
    request: ExternalSignal | None = None


class LoopManager:
    """Runs loops concurrently; the API behind ``ralphctl serve`` and ``ralphctl loops``."""

    def __init__(
        self,
        store: Store,
        *,
        max_concurrent: int = 5,
        resume_on_start: bool = True,
        adapter_factory: Callable[[LoopConfig], AgentAdapter] | None = None,
        event_retention: int | None = 10_000,
        retention_interval_s: float = RETENTION_INTERVAL_S,
    ) -> None:
        if max_concurrent < 1:
            raise ValueError(f"max_concurrent must be >= 1, not {max_concurrent}")
        self.store = store
        self.max_concurrent = max_concurrent
        self.resume_on_start = resume_on_start
        self.event_retention = event_retention
        self.retention_interval_s = retention_interval_s
        self._adapter_factory = adapter_factory or default_adapter
        self._running: dict[str, _Running] = {}
        self._queue: deque[str] = deque()  # pending loop ids, first come first served
        self._bus = EventBus()
        self._retention: asyncio.Task[None] | None = None
        self._closing = False

    @classmethod
    def from_settings(cls, store: Store, settings: LoopsSettings, **options: Any) -> LoopManager:
        """A manager configured by ``[loops]`` (``ralphctl.settings.resolve_settings``)."""
        return cls(
            store,
            max_concurrent=settings.max_concurrent,
            resume_on_start=settings.on_start == "resume",
            event_retention=settings.event_retention,
            **options,
        )

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Reconcile what the last manager left, then resume what should run."""
        found = reconcile(self.store, self._orphaned, self.resume_on_start)
        for event in found.events:
            self._bus.publish(event)
        self._queue.extend(loop.id for loop in found.to_resume)
        if self.event_retention is not None:
            self._retention = asyncio.create_task(self._retain(self.event_retention))
        self._fill()

    async def close(self) -> None:
        """Interrupt every running loop, leaving it to be resumed by the next ``start()``
        (a hook-mode loop's session is paused: ``resume`` continues it)."""
        self._closing = True
        if self._retention is not None:
            self._retention.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._retention
        tasks = [running.task for running in self._running.values() if running.task]
        for running in self._running.values():
            running.control.request(Interruption.SUSPEND)
        await asyncio.gather(*tasks, return_exceptions=True)
        self._bus.close()

    # -- commands ---------------------------------------------------------------------------

    async def create(self, spec: LoopSpec, *, queue: bool = True) -> LoopRecord:
        """Store a new loop and start it, or queue it as pending when every slot is taken.

        Raises ConcurrencyLimitReached (full and ``queue=False``), LoopAlreadyExists,
        InvalidSpec.
        """
        self._check_open()
        workdir, task, adapter = self._check_spec(spec)
        loop_id = uuid.uuid4().hex[:12]
        if not spec.worktree:
            self._check_free(workdir)
        if self._full() and not queue:
            raise ConcurrencyLimitReached(self._full_message())
        if spec.worktree:
            try:
                workdir = await add_worktree(workdir, loop_id)
            except GitError as exc:
                raise InvalidSpec(str(exc)) from None
        plan = _Plan(spec.config, adapter)
        if spec.mode == "hook":
            loop, plan = self._arm(loop_id, spec, workdir, task, adapter)
        else:
            loop = self.store.create_loop(_new_loop(loop_id, spec, workdir, task))
        clear_sentinels(workdir)
        queued = self._full()
        self._publish(loop.id, EventType.CREATED, _created(loop, queued))
        if queued:
            self._queue.append(loop.id)
            return loop
        return await self._start(loop, plan)

    async def pause(self, loop_id: str, *, now: bool = False) -> LoopRecord:
        """Pause between iterations (a hook-mode loop: at its session's next Stop), or
        ``now``: interrupt the running iteration."""
        loop, running = self._find(loop_id)
        transition(self._status(loop, running), LoopStatus.PAUSED)
        if running is None:
            return self._settle_or_ask(loop, LoopStatus.PAUSED, ExternalSignal.PAUSE)
        if now:
            return await self._interrupt(loop.id, running, Interruption.PAUSE)
        if running.request is not ExternalSignal.STOP:
            running.request = ExternalSignal.PAUSE
        self._publish(loop.id, EventType.PAUSE_REQUESTED, {"iteration": loop.iteration})
        return loop

    async def resume(self, loop_id: str) -> LoopRecord:
        """Start a paused, stopped, failed, blocked, pending or orphaned loop again.

        A hook-mode loop while pending or paused: a session that ended otherwise cannot be
        entered again (UnsupportedControl).
        """
        self._check_open()
        loop, running = self._find(loop_id)
        if running is not None or not self._orphaned(loop):
            transition(self._status(loop, running), LoopStatus.RUNNING)
        check_resumable(loop)
        self._check_free(Path(loop.workdir), loop.id)
        if len(self._running) >= self.max_concurrent:
            raise ConcurrencyLimitReached(self._full_message())
        plan = self._prepare(loop)
        with contextlib.suppress(ValueError):
            self._queue.remove(loop.id)
        clear_sentinels(Path(loop.workdir))  # an old request must not pause it at once
        return await self._start(loop, plan)

    async def stop(self, loop_id: str) -> LoopRecord:
        """End the loop as stopped; a running iteration is interrupted (recorded so)."""
        loop, running = self._find(loop_id)
        transition(self._status(loop, running), LoopStatus.STOPPED)
        if running is None:
            return self._settle_or_ask(loop, LoopStatus.STOPPED, ExternalSignal.STOP)
        return await self._interrupt(loop.id, running, Interruption.STOP)

    # -- queries ----------------------------------------------------------------------------

    def get(self, loop_id: str) -> LoopRecord:
        """The loop with this id or unique prefix; LoopNotFound otherwise."""
        return self.store.get_loop(loop_id)

    def list(self, statuses: Collection[LoopStatus] | None = None) -> list[LoopRecord]:
        return self.store.list_loops(statuses)

    def stats(self) -> Stats:
        return loop_stats(self.store)

    def subscribe(self, *, max_queue: int = 1000) -> Subscription:
        """Every event published from now on, in seq order; dropped when ``max_queue`` behind."""
        return self._bus.subscribe(max_queue=max_queue)

    @property
    def running_ids(self) -> tuple[str, ...]:
        """The loops this manager runs now."""
        return tuple(self._running)

    @property
    def queued_ids(self) -> tuple[str, ...]:
        """The loops waiting for a slot, next first."""
        return tuple(self._queue)

    # -- running loops ----------------------------------------------------------------------

    async def _start(self, loop: LoopRecord, plan: _Plan) -> LoopRecord:
        """Launch the loop and return it once its runner has recorded the start."""
        running = self._launch(loop, plan)
        await running.started.wait()
        return self.store.get_loop(loop.id)

    def _launch(self, loop: LoopRecord, plan: _Plan) -> _Running:
        workdir = Path(loop.workdir)
        running = _Running(workdir, RunControl(), asyncio.Event())
        runner: LoopRunner | HookLoopRunner
        relay = _Relay(self._bus, running)
        if plan.session is not None:
            runner = HookLoopRunner(
                self.store,
                plan.adapter,
                loop,
                plan.config,
                plan.session,
                observer=relay,
                control=running.control,
                external=lambda: self._signal(running),
            )
        else:
            runner = LoopRunner(
                self.store,
                plan.adapter,
                loop,
                plan.config,
                observer=relay,
                control=running.control,
                external=lambda: self._signal(running),
            )
        self._running[loop.id] = running
        running.task = asyncio.create_task(
            self._drive(loop.id, runner, running), name=f"loop {loop.id}"
        )
        return running

    async def _drive(
        self, loop_id: str, runner: LoopRunner | HookLoopRunner, running: _Running
    ) -> None:
        try:
            await runner.run()
        except Exception as exc:  # the store failed, or a bug
            self._runner_failed(loop_id, exc)
        finally:
            if self._running.get(loop_id) is running:  # not yet taken over by a resume
                del self._running[loop_id]
            running.started.set()
            self._fill()

    def _fill(self) -> None:
        """Start queued loops while slots are free."""
        while not self._closing and self._queue and len(self._running) < self.max_concurrent:
            loop = self.store.get_loop(self._queue.popleft())
            if loop.status not in (*_CONTROLLABLE, LoopStatus.PENDING):
                continue
            try:
                plan = self._prepare(loop)
            except InvalidSpec as exc:
                self._settle(loop, LoopStatus.STOPPED, f"cannot start: {exc}")
                continue
            self._launch(loop, plan)

    def _signal(self, running: _Running) -> ExternalSignal | None:
        """What the runner should do between iterations: a request, else a sentinel file."""
        requested, running.request = running.request, None
        sentinel = read_sentinel(running.workdir)
        if ExternalSignal.STOP in (requested, sentinel):
            return ExternalSignal.STOP
        return requested or sentinel

    async def _interrupt(
        self, loop_id: str, running: _Running, outcome: Interruption
    ) -> LoopRecord:
        running.control.request(outcome)
        assert running.task is not None
        await asyncio.shield(running.task)
        return self.store.get_loop(loop_id)

    def _runner_failed(self, loop_id: str, exc: Exception) -> None:
        """Leave the loop resumable; a hook-mode loop, whose session ended with its runner,
        stopped."""
        with contextlib.suppress(StoreError):
            loop = self.store.get_loop(loop_id)
            if loop.mode == "hook" and loop.status.is_active:  # its session ended with it
                message = f"the runner failed: {exc}; its session has ended"
                self._publish(loop_id, EventType.ERROR, {"message": message})
                self._settle(loop, LoopStatus.STOPPED, message, why=StopReason.INTERRUPTED)
                return
            message = f"the runner failed: {exc}; the loop can be resumed"
            self.store.save_loop(replace(loop, runner_pid=None))
            self._publish(loop_id, EventType.ERROR, {"message": message})

    async def _retain(self, keep: int) -> None:
        """Trim the event history now and then (the database is the only event memory)."""
        while True:
            with contextlib.suppress(StoreError):
                await asyncio.to_thread(prune_events, self.store, keep)
            await asyncio.sleep(self.retention_interval_s)

    # -- helpers ----------------------------------------------------------------------------

    def _find(self, loop_id: str) -> tuple[LoopRecord, _Running | None]:
        loop = self.store.get_loop(loop_id)
        return loop, self._running.get(loop.id)

    @staticmethod
    def _status(loop: LoopRecord, running: _Running | None) -> LoopStatus:
        """The loop's status; a launched loop whose runner has not begun yet counts as running."""
        if running is not None and loop.status is LoopStatus.PENDING:
            return LoopStatus.RUNNING
        return loop.status

    def _orphaned(self, loop: LoopRecord) -> bool:
        """Active per the database, yet no runner runs it (it crashed, or is queued here)."""
        return (
            loop.status in (*_CONTROLLABLE, LoopStatus.PENDING)
            and loop.id not in self._running
            and not runner_alive(loop)
        )

    def _settle_or_ask(
        self, loop: LoopRecord, status: LoopStatus, signal: ExternalSignal
    ) -> LoopRecord:
        """A loop run elsewhere is asked by its sentinel; any other is changed here."""
        if loop.status in _CONTROLLABLE and runner_alive(loop):
            write_sentinel(Path(loop.workdir), signal)
            return loop
        with contextlib.suppress(ValueError):
            self._queue.remove(loop.id)
        return self._settle(loop, status, f"{signal} requested")

    def _settle(
        self,
        loop: LoopRecord,
        status: LoopStatus,
        detail: str,
        *,
        why: StopReason = StopReason.USER_STOP,
    ) -> LoopRecord:
        settled, events = settle(self.store, loop, status, detail, why=why)
        for event in events:
            self._bus.publish(event)
        return settled

    def _check_open(self) -> None:
        if self._closing:
            raise RuntimeError("the loop manager is shutting down")

    def _check_spec(self, spec: LoopSpec) -> tuple[Path, str, AgentAdapter]:
        if spec.mode not in MODES:
            raise InvalidSpec(f"mode {spec.mode!r}: use fresh or hook")
        if spec.mode == "hook":
            try:
                check(spec.config, {})
            except HookModeError as exc:
                raise InvalidSpec(str(exc)) from None
        workdir = spec.workdir.expanduser().resolve()
        if not workdir.is_dir():
            raise InvalidSpec(f"work dir {spec.workdir} is not a directory")
        if not spec.task.strip():
            raise InvalidSpec("the task is empty")
        task = render_workflow(spec.workflow, spec.task) if spec.workflow else spec.task
        adapter = self._adapter(spec.config)
        try:
            adapter.check_available()
        except AgentUnavailable as exc:
            raise InvalidSpec(str(exc)) from None
        return workdir, task, adapter

    def _check_free(self, workdir: Path, loop_id: str | None = None) -> None:
        other = active_loop_in(self.store, workdir, loop_id)
        if other is not None:
            raise LoopAlreadyExists(
                f"loop {other.id} ({other.status}) already works in {workdir}: stop it, "
                "wait for it to end, or give the new loop a git worktree of its own"
            )

    def _prepare(self, loop: LoopRecord) -> _Plan:
        """How to run the stored loop; InvalidSpec if its configuration, agent or (hook mode)
        session is unusable."""
        try:
            config = resolve_loop_config(Path(loop.workdir), base=loop.config).config
        except ConfigError as exc:
            raise InvalidSpec(str(exc)) from None
        if not Path(loop.workdir).is_dir():
            raise InvalidSpec(f"the loop's work dir {loop.workdir} no longer exists")
        if loop.mode != "hook":
            return _Plan(config, self._adapter(config))
        try:
            return _Plan(config, self._adapter(config), session_of(loop))
        except HookModeError as exc:
            raise InvalidSpec(str(exc)) from None

    def _arm(
        self, loop_id: str, spec: LoopSpec, workdir: Path, task: str, adapter: AgentAdapter
    ) -> tuple[LoopRecord, _Plan]:
        """Store a new hook-mode loop with its session's tracker armed."""
        name = spec.name or default_name(spec.task)
        try:
            ready = prepare(
                self.store,
                adapter,
                task,
                workdir,
                spec.config,
                name=name,
                workflow=spec.workflow,
                loop_id=loop_id,
            )
        except HookModeError as exc:
            raise InvalidSpec(str(exc)) from None
        return ready.loop, _Plan(spec.config, adapter, ready.session)

    def _adapter(self, config: LoopConfig) -> AgentAdapter:
        try:
            return self._adapter_factory(config)
        except ValueError as exc:
            raise InvalidSpec(str(exc)) from None

    def _full(self) -> bool:
        return len(self._running) >= self.max_concurrent or bool(self._queue)

    def _full_message(self) -> str:
        return (
            f"{len(self._running)} loops are running (max_concurrent = {self.max_concurrent}); "
            "queue this one, stop or pause another, or raise [loops] max_concurrent"
        )

    def _publish(self, loop_id: str, event_type: EventType, data: dict[str, Any]) -> None:
        self._bus.publish(self.store.append_event(loop_id, str(event_type), data))


class _Relay:
    """The runners' observer: publishes their stored events and notes when a loop began."""

    def __init__(self, bus: EventBus, running: _Running) -> None:
        self._bus = bus
        self._running = running

    def on_event(self, event: EventRecord) -> None:
        if event.event_type in (EventType.STARTED, EventType.RESUMED):
            self._running.started.set()
        self._bus.publish(event)

    def on_agent_event(self, iteration: int, event: AgentEvent) -> None:
        """The agent's live stream is not stored, so it is not published either."""


def active_loop_in(store: Store, workdir: Path, except_id: str | None = None) -> LoopRecord | None:
    """An active loop (other than ``except_id``) working in ``workdir``, if any."""
    active = [s for s in LoopStatus if s.is_active]
    found = store.list_loops(active, limit=2, workdir=str(workdir))
    return next((loop for loop in found if loop.id != except_id), None)


def loop_stats(store: Store) -> Stats:
    """The seed's ``get_stats``: counts of active loops, totals over every loop."""
    from ralphctl.store.metrics import totals

    seen = totals(store)
    by_status = seen.loops_by_status
    return Stats(
        total_active=sum(n for s, n in by_status.items() if LoopStatus(s).is_active),
        running=by_status.get(LoopStatus.RUNNING, 0),
        paused=by_status.get(LoopStatus.PAUSED, 0),
        total_cost=seen.cost_usd,
        total_iterations=sum(seen.iterations_by_status.values()),
        total_tokens=seen.tokens["input"] + seen.tokens["output"],
    )


def default_adapter(config: LoopConfig) -> AgentAdapter:
    """The registry's adapter for ``config.agent``; ValueError for an unknown one."""
    from ralphctl.agents.registry import adapter_for

    return adapter_for(config.agent, options={"script": config.script} if config.script else {})


def workflow_layer(name: str) -> tuple[str, dict[str, Any]]:
    """An installed workflow's loop settings, as ``resolve_loop_config(..., extra=...)``."""
    flow = _workflow(name)
    values = {
        "completion_signal": flow.loop.completion_marker,
        "max_iterations": flow.loop.max_iterations if flow.loop.enabled else 1,
    }
    return f"workflow {name}", values


def render_workflow(name: str, task: str) -> str:
    """The prompt an installed workflow makes of ``task``."""
    return _workflow(name).render_prompt(task)


def _workflow(name: str) -> Workflow:
    from ralphctl.workflows.model import WorkflowError
    from ralphctl.workflows.registry import resolve

    try:
        return resolve(name)
    except WorkflowError as exc:
        raise InvalidSpec(str(exc)) from None


def _new_loop(loop_id: str, spec: LoopSpec, workdir: Path, task: str) -> LoopRecord:
    return new_loop(
        task,
        workdir,
        spec.config,
        name=spec.name or default_name(spec.task),
        mode=spec.mode,
        workflow=spec.workflow,
        loop_id=loop_id,
    )


def _created(loop: LoopRecord, queued: bool) -> dict[str, Any]:
    return {
        "name": loop.name,
        "workdir": loop.workdir,
        "agent": loop.agent,
        "queued": queued,
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }
