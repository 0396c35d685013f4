"""``LoopManager``: many loops in one process, with a concurrency limit.

Each running loop is a runner task: a ``LoopRunner`` (fresh context) or a ``HookLoopRunner``
(one Claude Code session kept going by its Stop hook; paused, the session is continued by the
next runner, and once it ended otherwise it cannot be entered again: ``docs/manager.md``).
Beyond ``max_concurrent`` new loops wait as
pending and start first-come first-served as slots free. Every state change is validated by
the state machine (``IllegalTransition`` otherwise), stored, then published to subscribers.
The database is the memory: a manager that crashes or shuts down is replaced by a new one
whose ``start()`` picks up where it stood (``engine/reconcile``). Every store call made on the
event loop goes through the store's thread (``engine/storethread``): a database that makes
writes wait holds up no other loop and no HTTP answer.

Fleet loops (``fleet.placement``) are never this manager's: the fleet's workers run them.
Its pause, resume and stop reach the worker holding one, or settle or queue it again
(``fleet.control``); on PostgreSQL the subscribers also get every other process's events, in
seq order (``engine/eventfeed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections import deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from ralphctl.agents.base import AgentUnavailable
from ralphctl.domain.conditions import ExternalSignal
from ralphctl.domain.events import EventType
from ralphctl.domain.states import LoopStatus, StopReason, transition
from ralphctl.engine import storethread
from ralphctl.engine.bus import EventBus, Subscription
from ralphctl.engine.control import (
    UnsupportedControl,
    check_resumable,
    clear_sentinels,
    runner_alive,
    settle,
    write_sentinel,
)
from ralphctl.engine.eventfeed import EventFeed
from ralphctl.engine.eventlog import log_event
from ralphctl.engine.hookmode.runner import HookLoopRunner
from ralphctl.engine.reconcile import reconcile
from ralphctl.engine.request import check_agent_ready
from ralphctl.engine.runner import Interruption, LoopRunner, RunControl
from ralphctl.engine.sentinels import read_sentinel
from ralphctl.engine.starting import (
    AdapterFactory,
    InvalidSpec,
    LoopAlreadyExists,
    LoopPlan,
    LoopRequest,
    attach_session,
    check_free,
    default_adapter,
    in_worktree,
    new_runner,
    prepare_loop,
    resume_plan,
    store_loop,
)
from ralphctl.engine.steering import tell
from ralphctl.engine.storefailure import MAX_RECOVERIES, StoreHealth, note_failure
from ralphctl.fleet.placement import is_fleet_loop
from ralphctl.settings import LoopsSettings
from ralphctl.store.errors import StoreError
from ralphctl.store.metrics import Stats, stats
from ralphctl.store.records import EventRecord, LoopRecord
from ralphctl.store.retention import prune_events
from ralphctl.store.transcript_chunks import prune_transcripts

if TYPE_CHECKING:
    from ralphctl.agents.events import AgentEvent
    from ralphctl.store.repository import Store

__all__ = [
    "ConcurrencyLimitReached",
    "InvalidSpec",
    "LoopAlreadyExists",
    "LoopManager",
    "LoopRequest",
    "ManagerClosing",
    "Stats",
    "Subscription",
    "UnsupportedControl",
]

RETENTION_INTERVAL_S = 60.0
MODES = ("fresh", "hook")
_CONTROLLABLE = (LoopStatus.RUNNING, LoopStatus.RATE_LIMITED)

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")


class ConcurrencyLimitReached(RuntimeError):
    """``max_concurrent`` loops already run and the caller asked not to queue."""


class ManagerClosing(RuntimeError):
    """The manager is shutting down: it starts and resumes no loop any more."""


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
        adapter_factory: AdapterFactory | None = None,
        event_retention: int | None = 10_000,
        transcript_retention_days: int = 0,
        retention_interval_s: float = RETENTION_INTERVAL_S,
    ) -> None:
        if max_concurrent < 1:
            raise ValueError(f"max_concurrent must be >= 1, not {max_concurrent}")
        self.store = store
        self.max_concurrent = max_concurrent
        self.resume_on_start = resume_on_start
        self.event_retention = event_retention
        self.transcript_retention_days = transcript_retention_days
        self.retention_interval_s = retention_interval_s
        self._adapter_factory = adapter_factory or default_adapter
        self._running: dict[str, _Running] = {}
        self._queue: deque[str] = deque()  # pending loop ids, first come first served
        self._bus = EventBus()
        self._retention: asyncio.Task[None] | None = None
        self._closing = False
        self.store_health = StoreHealth()  # what /api/health reports, without a query
        self._store_failures: dict[str, int] = {}  # per loop, since its last iteration
        self._recoveries: set[asyncio.Task[None]] = set()
        self._filling = asyncio.Lock()  # one _fill at a time: slots are counted, then taken
        self._feed: EventFeed | None = None  # other processes' events, once started

    @classmethod
    def from_settings(cls, store: Store, settings: LoopsSettings, **options: Any) -> LoopManager:
        """A manager configured by ``[loops]`` (``ralphctl.settings.resolve_settings``)."""
        return cls(
            store,
            max_concurrent=settings.max_concurrent,
            resume_on_start=settings.on_start == "resume",
            event_retention=settings.event_retention,
            transcript_retention_days=settings.transcript_retention_days,
            **options,
        )

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Follow the events of other processes (on PostgreSQL: ``engine.eventfeed``),
        reconcile what the last manager left, then resume what should run."""
        if self.store.url.startswith("postgresql"):
            self._feed = EventFeed(self.store, self._bus.publish)
            await self._feed.start()
        found = await storethread.submit_delivering(
            self.store,
            lambda found: self._emit_all(found.events),
            reconcile,
            self.store,
            self._orphaned,
            self.resume_on_start,
        )
        self._queue.extend(loop.id for loop in found.to_resume)
        if self.event_retention is not None or self.transcript_retention_days:
            self._retention = asyncio.create_task(self._retain())
        await self._fill()

    async def close(self) -> None:
        """Interrupt every running loop, leaving it to be resumed by the next ``start()``
        (a hook-mode loop's session is paused: ``resume`` continues it)."""
        self._closing = True
        for recovery in self._recoveries:
            recovery.cancel()  # the loop stays active: the next manager resumes it
        await asyncio.gather(*self._recoveries, return_exceptions=True)
        if self._retention is not None:
            self._retention.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._retention
        tasks = [running.task for running in self._running.values() if running.task]
        for running in self._running.values():
            running.control.request(Interruption.SUSPEND)
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._feed is not None:
            await self._feed.close()
        self._bus.close()

    # -- commands ---------------------------------------------------------------------------

    async def create(self, request: LoopRequest, *, queue: bool = True) -> LoopRecord:
        """Store a new loop and start it, or queue it as pending when every slot is taken.

        Raises ConcurrencyLimitReached (full and ``queue=False``), LoopAlreadyExists,
        InvalidSpec, ConfigError.
        """
        self._check_open()
        plan = await asyncio.to_thread(prepare_loop, request, adapters=self._adapter_factory)
        try:  # in a thread: it may install the agent's CLI (auto_install), for minutes
            await asyncio.to_thread(
                check_agent_ready, plan.adapter, plan.config, Path(plan.loop.workdir)
            )
        except AgentUnavailable as exc:
            raise InvalidSpec(str(exc)) from None
        if not request.worktree:
            await self._stored(check_free, self.store, Path(plan.loop.workdir))
        if self._full() and not queue:
            raise ConcurrencyLimitReached(self._full_message())
        if request.worktree:
            plan = await in_worktree(plan)
        plan = await self._stored(store_loop, self.store, plan)
        loop = plan.loop
        clear_sentinels(Path(loop.workdir))
        queued = self._full()
        # The slot is taken (or the place in the queue) before the event is written; the
        # event is queued for the store before anything the runner writes.
        running = None if queued else self._launch(loop, plan)
        if running is None:
            self._queue.append(loop.id)
        await self._publish(loop.id, EventType.CREATED, _created(loop, queued))
        if running is None:
            return loop
        return await self._started(loop.id, running)

    async def pause(self, loop_id: str, *, now: bool = False) -> LoopRecord:
        """Pause between iterations (a hook-mode loop: at its session's next Stop), or
        ``now``: interrupt the running iteration."""
        loop, running = await self._find(loop_id)
        if running is None and await self._stored(is_fleet_loop, self.store, loop.id):
            return await self._control_fleet(loop.id, ExternalSignal.PAUSE, now=now)
        transition(self._status(loop, running), LoopStatus.PAUSED)
        if running is None:
            return await self._settle_or_ask(loop, LoopStatus.PAUSED, ExternalSignal.PAUSE)
        if now:
            return await self._interrupt(loop.id, running, Interruption.PAUSE)
        if running.request is not ExternalSignal.STOP:
            running.request = ExternalSignal.PAUSE
        await self._publish(loop.id, EventType.PAUSE_REQUESTED, {"iteration": loop.iteration})
        return loop

    async def tell(self, loop_id: str, text: str, sender: str) -> EventRecord:
        """Send the user's message to the loop's agent (``engine.steering.tell``), published to
        the subscribers like every event; a loop waiting for an answer reads it within a second."""
        loop = await self._stored(self.store.get_loop, loop_id)
        told = await self._stored(tell, self.store, loop, text, sender)
        self._emit(told)
        return told

    async def resume(self, loop_id: str) -> LoopRecord:
        """Start a paused, stopped, failed, blocked, pending or orphaned loop again.

        A hook-mode loop while pending or paused: a session that ended otherwise cannot be
        entered again (UnsupportedControl).
        """
        self._check_open()
        loop, running = await self._find(loop_id)
        if running is None and await self._stored(is_fleet_loop, self.store, loop.id):
            return await self._resume_fleet(loop.id)
        if running is not None or not self._orphaned(loop):
            transition(self._status(loop, running), LoopStatus.RUNNING)
        check_resumable(loop)
        await self._stored(check_free, self.store, Path(loop.workdir), loop.id)
        if len(self._running) >= self.max_concurrent:
            raise ConcurrencyLimitReached(self._full_message())
        plan = self._prepare(loop)
        with contextlib.suppress(ValueError):
            self._queue.remove(loop.id)
        clear_sentinels(Path(loop.workdir))  # an old request must not pause it at once
        return await self._started(loop.id, self._launch(loop, plan))

    async def stop(self, loop_id: str) -> LoopRecord:
        """End the loop as stopped; a running iteration is interrupted (recorded so)."""
        loop, running = await self._find(loop_id)
        if running is None and await self._stored(is_fleet_loop, self.store, loop.id):
            return await self._control_fleet(loop.id, ExternalSignal.STOP)
        transition(self._status(loop, running), LoopStatus.STOPPED)
        if running is None:
            return await self._settle_or_ask(loop, LoopStatus.STOPPED, ExternalSignal.STOP)
        return await self._interrupt(loop.id, running, Interruption.STOP)

    # -- queries ----------------------------------------------------------------------------

    def get(self, loop_id: str) -> LoopRecord:
        """The loop with this id or unique prefix; LoopNotFound otherwise."""
        return self.store.get_loop(loop_id)

    def list(self, statuses: Collection[LoopStatus] | None = None) -> list[LoopRecord]:
        return self.store.list_loops(statuses)

    def stats(self) -> Stats:
        """Active loops and what they spent so far; every loop, all told."""
        return stats(self.store)

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

    async def _started(self, loop_id: str, running: _Running) -> LoopRecord:
        """The launched loop, once its runner has recorded the start."""
        await running.started.wait()
        return await self._stored(self.store.get_loop, loop_id)

    def _launch(self, loop: LoopRecord, plan: LoopPlan) -> _Running:
        workdir = Path(loop.workdir)
        running = _Running(workdir, RunControl(), asyncio.Event())
        runner = new_runner(
            self.store,
            replace(plan, loop=loop),
            observer=_Relay(self._emit, running),
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
        except StoreError as exc:
            self._store_failed(loop_id, exc, hook=isinstance(runner, HookLoopRunner))
        except Exception as exc:  # a bug
            log.exception("loop %s: the runner failed", loop_id)
            await self._runner_failed(loop_id, exc)
        finally:
            if self._running.get(loop_id) is running:  # not yet taken over by a resume
                del self._running[loop_id]
            running.started.set()
        await self._fill()

    async def _fill(self) -> None:
        """Start queued loops while slots are free."""
        async with self._filling:
            while not self._closing and self._queue and len(self._running) < self.max_concurrent:
                loop_id = self._queue[0]  # queued until launched: the manager is never seen idle
                loop = await self._stored(self.store.get_loop, loop_id)
                if self._closing or not self._queue or self._queue[0] != loop_id:
                    continue  # closing, or the loop was resumed or stopped meanwhile
                self._queue.popleft()
                if loop.status not in (*_CONTROLLABLE, LoopStatus.PENDING):
                    continue
                try:
                    plan = self._prepare(loop)
                except InvalidSpec as exc:
                    await self._settle(loop, LoopStatus.STOPPED, f"cannot start: {exc}")
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
        return await self._stored(self.store.get_loop, loop_id)

    async def _runner_failed(self, loop_id: str, exc: Exception) -> None:
        """Leave the loop resumable; a hook-mode loop, whose session ended with its runner,
        stopped."""
        with contextlib.suppress(StoreError):
            loop = await self._stored(self.store.get_loop, loop_id)
            if loop.mode == "hook" and loop.status.is_active:  # its session ended with it
                message = f"the runner failed: {exc}; its session has ended"
                await self._publish(loop_id, EventType.ERROR, {"message": message})
                await self._settle(loop, LoopStatus.STOPPED, message, why=StopReason.INTERRUPTED)
                return
            message = f"the runner failed: {exc}; the loop can be resumed"
            await self._stored(self.store.save_loop, replace(loop, runner_pid=None))
            await self._publish(loop_id, EventType.ERROR, {"message": message})

    def _store_failed(self, loop_id: str, exc: StoreError, *, hook: bool) -> None:
        """Log the failure and recover from it in the background (``engine/storefailure``)."""
        self.store_health.failed(str(exc))
        log.error("loop %s: the database failed: %s", loop_id, exc)
        recovery = asyncio.create_task(
            self._recover(loop_id, str(exc), hook=hook), name=f"recover {loop_id}"
        )
        self._recoveries.add(recovery)
        recovery.add_done_callback(self._recoveries.discard)

    async def _recover(self, loop_id: str, problem: str, *, hook: bool) -> None:
        """Once the database takes the error event: resume the loop, or fail it after
        ``MAX_RECOVERIES`` failures with no iteration completed in between (a hook-mode
        loop, whose session ended with its runner, is stopped)."""
        failures = self._store_failures[loop_id] = self._store_failures.get(loop_id, 0) + 1
        gives_up = failures >= MAX_RECOVERIES
        if hook:
            then = "its session has ended: the loop stops"
        else:
            then = "the loop fails" if gives_up else "the loop resumes once it takes writes again"
        message = f"the database failed: {problem}; {then}"
        loop = await note_failure(self.store, self.store_health, loop_id, message, self._emit)
        self.store_health.recovered()
        if self._closing or loop.status not in _CONTROLLABLE:
            return  # suspended: the next manager resumes it
        try:
            if hook:
                detail = f"the database failed: {problem}; its session has ended"
                await self._settle(loop, LoopStatus.STOPPED, detail, why=StopReason.INTERRUPTED)
            elif gives_up:
                detail = f"the database failed {failures} times in a row: {problem}"
                await self._settle(loop, LoopStatus.FAILED, detail, why=StopReason.STORE_FAILED)
            else:
                self._queue.appendleft(loop_id)
                await self._fill()
                how = "resumed" if loop_id in self._running else "queued to resume"
                log.info("loop %s: %s after the database failure", loop_id, how)
        except StoreError as exc:
            self._store_failed(loop_id, exc, hook=hook)

    async def _retain(self) -> None:
        """Now and then trim the event history (the database is the only event memory) and
        delete the transcripts older than ``transcript_retention_days``, however long the
        manager has been idle."""
        while True:
            if self.event_retention is not None:
                with contextlib.suppress(StoreError):
                    await asyncio.to_thread(prune_events, self.store, self.event_retention)
            if self.transcript_retention_days:
                cutoff = datetime.now(UTC) - timedelta(days=self.transcript_retention_days)
                with contextlib.suppress(StoreError):
                    await asyncio.to_thread(prune_transcripts, self.store, started_before=cutoff)
            await asyncio.sleep(self.retention_interval_s)

    # -- helpers ----------------------------------------------------------------------------

    async def _find(self, loop_id: str) -> tuple[LoopRecord, _Running | None]:
        loop = await self._stored(self.store.get_loop, loop_id)
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

    async def _settle_or_ask(
        self, loop: LoopRecord, status: LoopStatus, signal: ExternalSignal
    ) -> LoopRecord:
        """A loop run elsewhere is asked by its sentinel; any other is changed here."""
        if loop.status in _CONTROLLABLE and runner_alive(loop):
            write_sentinel(Path(loop.workdir), signal)
            return loop
        with contextlib.suppress(ValueError):
            self._queue.remove(loop.id)
        return await self._settle(loop, status, f"{signal} requested")

    async def _settle(
        self,
        loop: LoopRecord,
        status: LoopStatus,
        detail: str,
        *,
        why: StopReason = StopReason.USER_STOP,
    ) -> LoopRecord:
        settled, _events = await storethread.submit_delivering(
            self.store,
            lambda done: self._emit_all(done[1]),
            settle,
            self.store,
            loop,
            status,
            detail,
            why=why,
        )
        return settled

    async def _control_fleet(
        self, loop_id: str, signal: ExternalSignal, *, now: bool = False
    ) -> LoopRecord:
        """Pause or stop a fleet loop: its worker is asked, or it is settled here."""
        from ralphctl.fleet.control import control_fleet_loop  # the fleet extra

        controlled = await storethread.submit_delivering(
            self.store,
            lambda done: self._emit_all(done.events),
            control_fleet_loop,
            self.store,
            loop_id,
            signal,
            now=now,
        )
        return controlled.loop

    async def _resume_fleet(self, loop_id: str) -> LoopRecord:
        """Queue a fleet loop again for a worker (``fleet.control``)."""
        from ralphctl.fleet.control import mark_resumed, requeue  # the fleet extra

        controlled, labels = await storethread.submit_delivering(
            self.store,
            lambda done: self._emit_all(done[0].events),
            mark_resumed,
            self.store,
            loop_id,
        )
        await requeue(self.store.url, loop_id, labels)
        return controlled.loop

    def _check_open(self) -> None:
        if self._closing:
            raise ManagerClosing("the loop manager is shutting down")

    def _prepare(self, loop: LoopRecord) -> LoopPlan:
        """How to run the stored loop; InvalidSpec if it cannot run any more."""
        return attach_session(resume_plan(loop, adapters=self._adapter_factory))

    def _full(self) -> bool:
        return len(self._running) >= self.max_concurrent or bool(self._queue)

    def _full_message(self) -> str:
        return (
            f"{len(self._running)} loops are running (max_concurrent = {self.max_concurrent}); "
            "queue this one, stop or pause another, or raise [loops] max_concurrent"
        )

    def _emit(self, event: EventRecord) -> None:
        """Log a stored event (``engine/eventlog``), then hand it to the subscribers."""
        log_event(event)
        if event.event_type == EventType.ITERATION_COMPLETED:
            self._store_failures.pop(event.loop_id, None)
        if self._feed is None:
            self._bus.publish(event)
        else:
            self._feed.local(event)

    def _emit_all(self, events: Iterable[EventRecord]) -> None:
        for event in events:
            self._emit(event)

    async def _publish(self, loop_id: str, event_type: EventType, data: dict[str, Any]) -> None:
        """Store the event; it is published from the store's thread (``engine/storethread``)."""
        kind = str(event_type)
        append = self.store.append_event
        await storethread.submit_delivering(self.store, self._emit, append, loop_id, kind, data)

    async def _stored(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``call`` (a store call) run on the store's thread (``engine/storethread``)."""
        return await storethread.run(self.store, call, *args, **kwargs)


class _Relay:
    """The runners' observer: emits their stored events and notes when a loop began."""

    def __init__(self, emit: Callable[[EventRecord], None], running: _Running) -> None:
        self._emit = emit
        self._running = running

    def on_event(self, event: EventRecord) -> None:
        if event.event_type in (EventType.STARTED, EventType.RESUMED):
            self._running.started.set()
        self._emit(event)

    def on_agent_event(self, iteration: int, event: AgentEvent) -> None:
        """The agent's live stream is not stored, so it is not published either."""


def _created(loop: LoopRecord, queued: bool) -> dict[str, Any]:
    return {
        "name": loop.name,
        "workdir": loop.workdir,
        "agent": loop.agent,
        "queued": queued,
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }
