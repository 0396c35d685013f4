"""The fresh-context loop: prompt, run the agent, record, ask the brain, cool down, repeat.

Everything needed to continue is committed to the store before the next iteration starts, so
a crash at any moment loses at most the running iteration (marked interrupted on resume). An
iteration's start or record the store refuses is kept in the loop's journal
(``engine/unrecorded``) before the run ends, and recorded when the loop is next taken over.
Store calls run on the store's thread and are awaited (``engine/storethread``): under
``ralphctl serve`` the event loop, shared by every loop and the API, never waits on the database.
What only a finished iteration needs (assessing and recording it, the breaker, gates, checkpoints,
the usage warning, the workflow tracker) is imported where it is used: ``ralphctl run`` spawns
its first agent without it (start-up, ``bench/overhead.py``); the agent's parser comes with its
first line (``ParserOnFirstLine``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from ralphctl.agents.base import AgentAdapter, AgentUnavailable, ParserOnFirstLine
from ralphctl.agents.process import run_agent
from ralphctl.domain.backoff import backoff_delay
from ralphctl.domain.budget_warnings import budget_warnings
from ralphctl.domain.conditions import (
    CONTINUE,
    Action,
    Decision,
    ExternalSignal,
    evaluate,
    remaining,
)
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.events import EventType
from ralphctl.domain.markers import Detection, first_declaration
from ralphctl.domain.model import IterationResult, TokenUsage
from ralphctl.domain.states import LoopStatus, StopReason, transition
from ralphctl.domain.steering import DELIVERED_KEY, NO_HUMAN_NOTE, Message
from ralphctl.domain.stoprules import Totals
from ralphctl.engine import storethread
from ralphctl.engine.progress import ProgressProbe
from ralphctl.engine.prompt import HISTORY_SHOWN, PastIteration, PromptContext, build_prompt
from ralphctl.engine.ratelimit import calls_wait
from ralphctl.engine.request import agent_request, ignored_settings, prompt_path
from ralphctl.engine.sandboxing import bypass_warning, gate_confinement, loop_command
from ralphctl.engine.sentinels import read_sentinel
from ralphctl.engine.statefile import StateWriter, check_state_file
from ralphctl.engine.steering import Inbox
from ralphctl.engine.transcript_writer import TranscriptRecorder, TranscriptSummary
from ralphctl.engine.waits import wait_set
from ralphctl.store.errors import StoreError
from ralphctl.store.records import EventRecord, IterationRecord, LoopRecord, loop_summary

if TYPE_CHECKING:
    from ralphctl.agents.events import AgentEvent
    from ralphctl.domain.breaker import BreakerState, Verdict
    from ralphctl.engine.assess import Assessment
    from ralphctl.engine.checkpoint import CheckpointMemory, CheckpointOutcome
    from ralphctl.engine.fresh_tracker import FreshTracker
    from ralphctl.engine.gates import GateResult
    from ralphctl.engine.leftovers import Leftovers
    from ralphctl.store.repository import Store

P = ParamSpec("P")
T = TypeVar("T")

MIN_ITERATION_TIMEOUT_S = 1.0
WAIT_POLL_S = 1.0  # how often a long wait looks for a stop or pause request
INTERRUPTED = Decision(Action.STOP, StopReason.INTERRUPTED, "interrupted")

log = logging.getLogger(__name__)


class LoopObserver(Protocol):
    """Receives what a running loop does, for a terminal UI or a server."""

    def on_event(self, event: EventRecord) -> None: ...

    def on_agent_event(self, iteration: int, event: AgentEvent) -> None: ...


class Interruption(StrEnum):
    """What an interrupt makes of the loop."""

    INTERRUPTED = "interrupted"  # stopped, reason interrupted (Ctrl-C, SIGTERM)
    STOP = "stop"  # stopped, reason user_stop (a stop request)
    PAUSE = "pause"  # paused ("pause now")
    SUSPEND = "suspend"  # left active with no runner, for the next one to continue (shutdown)


_INTERRUPT_DECISIONS = {
    Interruption.INTERRUPTED: INTERRUPTED,
    Interruption.STOP: Decision(Action.STOP, StopReason.USER_STOP, "stop requested"),
    Interruption.PAUSE: Decision(Action.PAUSE, None, "pause requested"),
}


@dataclass
class RunControl:
    """Set ``interrupt`` to stop after killing the running agent; ``force`` to kill at once.

    ``request`` interrupts with another outcome than the default "stopped, interrupted".
    """

    interrupt: asyncio.Event = field(default_factory=asyncio.Event)
    force: asyncio.Event = field(default_factory=asyncio.Event)
    outcome: Interruption = Interruption.INTERRUPTED

    def request(self, outcome: Interruption) -> None:
        self.outcome = outcome
        self.interrupt.set()


@dataclass
class _Start:
    """An iteration about to run. It is recorded (``begun``: the write, queued on the store's
    thread) once its agent has started, so the record carries the agent's pid; ``recordable``
    once the loop itself is stored. ``spawn_tried``: its agent started, or could not."""

    record: IterationRecord
    recordable: bool
    spawned: bool = False
    begun: asyncio.Future[EventRecord] | None = None
    messages: tuple[int, ...] = ()  # the seqs of the user's messages its prompt carries
    spawn_tried: asyncio.Event = field(default_factory=asyncio.Event)


class LoopRunner:
    """Runs one loop to its end (or until interrupted), persisting as it goes."""

    calls_window_s = 3600.0  # the window of max_calls_per_hour

    def __init__(
        self,
        store: Store | Callable[[], Store],
        adapter: AgentAdapter,
        loop: LoopRecord,
        config: LoopConfig,
        *,
        observer: LoopObserver | None = None,
        control: RunControl | None = None,
        external: Callable[[], ExternalSignal | None] | None = None,
    ) -> None:
        # A function instead of a store means a new loop, not stored yet: the first agent is
        # spawned at once, and the store is opened (a heavy import), the loop created and the
        # iteration recorded while it runs. This keeps start-up to the first spawn short.
        self._store: Store | None = None if callable(store) else store
        self._open_store: Callable[[], Store] | None = store if callable(store) else None
        self.adapter = adapter
        self.loop = loop
        self.config = config
        self.observer = observer
        self.control = control or RunControl()
        self.workdir = Path(loop.workdir)
        self.external = external or (lambda: read_sentinel(self.workdir))
        self._history: list[IterationRecord] = []
        self._checkpoints = config.checkpoint_interval > 0
        self._git: bool | None = None  # is the work dir a git work tree (None: not known yet)
        self._notes: tuple[str, ...] = ()
        self._parked_until: datetime | None = None
        self._parked_reason = ""
        self._unpriced_warned: set[str] = set()
        self._runtime_base = loop.runtime_s
        self._segment_start = time.monotonic()
        self._state = StateWriter(self.workdir, self._state_failed)
        self._progress = ProgressProbe(self.workdir)
        self._checkpoint_memory: CheckpointMemory | None = None  # made by the first checkpoint
        self._tracker: FreshTracker | None = None
        if config.tracker_template:
            from ralphctl.engine.fresh_tracker import FreshTracker

            self._tracker = FreshTracker(self.workdir, loop.id)
        self._tracker_problem: str | None = None
        self._budgets_warned: set[str] = set()  # budget_warning said (read back on resume)
        self._inbox = Inbox(loop.id)
        self._unsettled: asyncio.Future[None] | None = None  # a deferred record (_record)
        self._early_messages: asyncio.Future[list[Message]] | None = None
        self._messages_slept = False  # the loop slept since the early read
        self._agent_ended: float | None = None  # when the last agent exited (monotonic)

    @functools.cached_property
    def _breaker(self) -> BreakerState:
        """The loop's circuit breaker, read from its record once needed: after the first
        iteration of a new loop, which has nothing for it to check."""
        from ralphctl.domain.breaker import from_dict

        return from_dict(self.loop.breaker_state or {})

    @property
    def stored(self) -> bool:
        """Whether the loop exists in the store (a new loop is created with its first iteration)."""
        return self._open_store is None

    @property
    def store(self) -> Store:
        assert self._store is not None, "the store is opened with the first iteration"
        return self._store

    async def run(self) -> LoopRecord:
        """Run until a stop condition, a pause or an interrupt; return the final record."""
        try:
            return await self._run()
        finally:
            with contextlib.suppress(Exception):  # already kept; the run ends for another reason
                await self._settle()
            await self._state.flush()  # .ralph/state.json shows the end once the run returns
            self._progress.close()

    async def _run(self) -> LoopRecord:
        if self.stored:
            await self._begin()
            if self._history and _declared_done(self._history[-1]):  # its runner died ending it
                return await self._end(
                    evaluate(self._totals(), self.config.budgets, completed=True)
                )
        else:
            self._git = await self._progress.is_work_tree()
        while True:
            external = self.external() if self.stored else None  # also between iterations
            decision = evaluate(self._totals(), self.config.budgets, external=external)
            if decision.action is Action.CONTINUE:
                decision = await self._wait_for_permission()
            if decision.action is not Action.CONTINUE:
                return await self._end(decision)
            try:
                result, assessment = await self._iteration(self.loop.iteration + 1)
            except AgentUnavailable as exc:
                return await self._end(
                    Decision(Action.STOP, StopReason.AGENT_UNAVAILABLE, str(exc))
                )
            if result.interrupted or self.control.interrupt.is_set():
                return await self._end(INTERRUPTED)
            if assessment.usage_limit is not None:
                continue  # parked until the reset by _wait_for_permission
            trip = None if self.config.auto_recover else (assessment.breaker.reason or None)
            decision = evaluate(
                self._totals(),
                self.config.budgets,
                completed=assessment.completed,
                blocked_reason=assessment.blocked_reason,
                breaker_trip=trip if assessment.tripped else None,
                external=self.external(),
            )
            if decision.action is not Action.CONTINUE:
                return await self._end(decision)
            question = assessment.signals.question
            if question is not None and self.config.on_question == "wait":
                answered = await self._await_answer(question)
                if answered is not None:
                    return await self._end(answered)
            elif await self._cooldown(self._pause_after(result)):
                return await self._end(INTERRUPTED)

    # -- before an iteration: breaker, usage limits, calls per hour --------------------------

    async def _wait_for_permission(self) -> Decision:
        """Wait while something says not yet; CONTINUE, or why the loop must end instead. A
        new loop, not stored yet, has neither a breaker's history nor calls to count."""
        if not self.stored:
            return CONTINUE
        from ralphctl.domain.breaker import BreakerAction, check

        while True:
            verdict = check(self._breaker, self.config.breaker, time.time())
            self._breaker = verdict.state
            if verdict.action is BreakerAction.TRIP:
                return Decision(Action.STOP, StopReason.CIRCUIT_BREAKER, verdict.reason)
            wait = await self._next_wait(verdict)
            if wait is None:
                return CONTINUE
            until, reason, status = wait
            ended = await self._wait(until, reason, status)
            if ended is not None:
                return ended

    async def _next_wait(self, verdict: Verdict) -> tuple[datetime, str, LoopStatus] | None:
        from ralphctl.domain.breaker import BreakerAction

        if verdict.action is BreakerAction.WAIT and verdict.until is not None:
            until = datetime.fromtimestamp(verdict.until, UTC)
            return until, f"circuit breaker open: {verdict.reason}", LoopStatus.RUNNING
        if self._parked_until is not None and self._parked_until > _now():
            return self._parked_until, self._parked_reason, LoopStatus.RATE_LIMITED
        limits = self.config.max_calls_per_hour, self.config.max_calls_per_hour_global
        if limits == (None, None):  # no need to count calls
            return None
        calls = await self._stored(
            calls_wait,
            self.store,
            self.loop.id,
            per_loop=self.config.max_calls_per_hour,
            global_=self.config.max_calls_per_hour_global,
            now=_now(),
            window_s=self.calls_window_s,
        )
        if calls is None:
            return None
        until, reason = calls
        return until, reason, LoopStatus.RATE_LIMITED

    async def _wait(self, until: datetime, reason: str, status: LoopStatus) -> Decision | None:
        """Park until ``until`` (persisted, so a restart keeps waiting); None once it is over."""
        await self._settle()
        self._progress.forget()  # the user may work meanwhile: that is not the agent's progress
        if status is not self.loop.status:
            transition(self.loop.status, status)
        await self._save(
            replace(self.loop, status=status, rate_limited_until=until, stop_detail=reason),
            (EventType.WAITING, {"until": until.isoformat(), "reason": reason, "status": status}),
        )
        ended: Decision | None = None
        while ended is None and _now() < until:
            left = (until - _now()).total_seconds()
            if await self._sleep(min(left, WAIT_POLL_S)):
                ended = INTERRUPTED
            elif (signal := self.external()) is not None:
                ended = evaluate(self._totals(), self.config.budgets, external=signal)
        if ended is INTERRUPTED and self.control.outcome is Interruption.SUSPEND:
            return ended  # still parked: the next runner waits out the rest
        if self.loop.status is not LoopStatus.RUNNING:
            transition(self.loop.status, LoopStatus.RUNNING)
        self._parked_until = None
        self.loop = await self._stored(
            self.store.save_loop,
            replace(
                self.loop, status=LoopStatus.RUNNING, rate_limited_until=None, stop_detail=None
            ),
        )
        return ended

    async def _await_answer(self, question: str) -> Decision | None:
        """``on_question = wait``: paused until the user tells the loop something (the answer
        goes into the next prompt) or ``question_timeout`` passes (the agent then chooses a
        safe default); None once it may go on, else why the loop ends instead."""
        await self._settle()
        until = _now() + timedelta(seconds=self.config.question_timeout)
        transition(self.loop.status, LoopStatus.PAUSED)
        detail = f"waiting until {until:%Y-%m-%d %H:%M} UTC for an answer: {question}"
        data = {"until": until.isoformat(), "reason": "question", "status": "paused"}
        await self._save(
            replace(self.loop, status=LoopStatus.PAUSED, stop_detail=detail),
            (EventType.WAITING, data | {"question": question}),
        )
        ended: Decision | None = None
        answered = False
        while ended is None and not answered and _now() < until:
            left = (until - _now()).total_seconds()
            if await self._sleep(min(left, WAIT_POLL_S)):
                ended = INTERRUPTED
            elif (signal := self.external()) is not None:
                ended = evaluate(self._totals(), self.config.budgets, external=signal)
            else:
                answered = bool(await self._stored(self._inbox.pending, self.store))
        transition(self.loop.status, LoopStatus.RUNNING)
        self.loop = await self._stored(
            self.store.save_loop, replace(self.loop, status=LoopStatus.RUNNING, stop_detail=None)
        )
        if answered:  # the answer replaces "no human is available"
            self._notes = tuple(note for note in self._notes if note != NO_HUMAN_NOTE)
        elif ended is None:
            message = "no answer to the agent's question in time: it chooses a safe default"
            await self._publish(EventType.WARNING, {"message": message})
        return ended

    # -- one iteration -------------------------------------------------------------------

    async def _iteration(self, n: int) -> tuple[IterationResult, Assessment]:
        self._make_tracker()
        told = await self._messages()
        prompt = self._prompt(n, [message.text for message in told])
        before = await self._progress.before() if self._git else None
        # The session id is recorded with the start: what the agent itself kept of a run whose
        # runner died can then be found (engine/usage_recovery).
        session_id = str(uuid.uuid4())
        started = IterationRecord(self.loop.id, n, _now(), agent_session_id=session_id)
        start = _Start(started, self.stored, messages=tuple(m.seq for m in told))
        transcript = TranscriptRecorder(self.loop.id, n, self._store)
        agent = asyncio.create_task(self._run_agent(n, prompt, session_id, start, transcript))
        looking: asyncio.Future[str | None] | None = None
        try:
            if not self.stored:
                await self._store_new_loop(start, agent)
                transcript.attach(self.store)
            result = await agent
            checkpoint = self._checkpoint_due(n, result)
            if before is not None and not self.config.gates:  # gates may write: look after them
                looking = self._look(checkpoint)  # while the transcript is closed
        except AgentUnavailable as exc:
            start.messages = ()  # no agent read them: still pending
            self._begin_iteration(start)
            failed = IterationResult(is_error=True, error_message=str(exc))
            await self._record(start, failed, None)
            raise
        finally:
            recorded = await transcript.close()
        from ralphctl.engine.assess import assess, completion_claim
        from ralphctl.engine.gates import run_gates

        detection = completion_claim(result, self.config.marker, prompt)
        if self._tracker is not None and not result.is_error:
            detection = first_declaration(detection, await self._tracker_declaration(n))
        gates: list[GateResult] = []
        if detection.completed and self.config.gates and not result.interrupted:
            gates = await run_gates(
                self.config.gates,
                self.workdir,
                timeout_s=self.config.gate_timeout,
                interrupt=self.control.interrupt,
                confine=gate_confinement(self.config, self.workdir),
            )
        changed = None
        if before is not None:
            changed = await (looking or self._look(checkpoint)) != before
        assessment = assess(
            n,
            result,
            detection,
            gates=gates,
            changed=changed,
            previous_lengths=[len(it.output_summary) for it in self._history if it.status == "ok"],
            breaker=self._breaker,
            breaker_config=self.config.breaker,
            prices=self.config.prices,
            usage_limit_wait=self.config.usage_limit_wait,
            now=time.time(),
        )
        outcome = await self._commit_checkpoint(n) if checkpoint else None
        sha = outcome.sha if outcome is not None else None
        await self._record(start, result, assessment, recorded, sha, defer=True)
        if outcome is not None and outcome.error:
            await self._checkpoint_failed(n, outcome.error)
        return result, assessment

    def _spawned(self, start: _Start, pid: int, at: float) -> None:
        """The agent started: record the iteration with it (once the loop is stored)."""
        started = datetime.fromtimestamp(at, UTC)
        start.record = replace(start.record, agent_pid=pid, agent_started_at=started)
        start.spawned = True
        start.spawn_tried.set()
        if start.recordable:
            self._begin_iteration(start)

    def _begin_iteration(self, start: _Start) -> None:
        """Record that the iteration started (once). Called back when the agent starts, so the
        write is queued, not awaited: what is written later still comes after it, and its
        event is published before theirs (``_record`` awaits it)."""
        if start.begun is not None:
            return
        start.begun = storethread.submit_delivering(
            self.store, self._deliver_one, self._store_start, start.record, start.messages
        )
        start.begun.add_done_callback(
            lambda begun: self._start_unstored(start.record, start.messages, begun)
        )

    def _store_start(self, record: IterationRecord, messages: tuple[int, ...]) -> EventRecord:
        """On the store's thread: the iteration's start and its event, in one transaction."""
        (stored,) = self.store.begin_iteration(record, [_started_event(record.n, messages)])
        return stored

    def _start_unstored(
        self,
        record: IterationRecord,
        messages: tuple[int, ...],
        begun: asyncio.Future[EventRecord],
    ) -> None:
        """A start the store refused is kept, so that the iteration gets a record even if this
        runner dies now (its event, once stored, was published from the store's thread)."""
        if not begun.cancelled() and begun.exception() is not None:
            from ralphctl.engine.unrecorded import keep

            keep(self.workdir, record, [_started_event(record.n, messages)])

    async def _store_new_loop(self, start: _Start, agent: asyncio.Task[IterationResult]) -> None:
        """Open the store in a worker thread while the first agent runs; record the start.
        The thread starts once the agent has: its Python (imports, SQLite set-up) would hold
        the GIL the spawn needs, for up to 5 ms at a time (``sys.getswitchinterval``)."""
        assert self._open_store is not None
        agent.add_done_callback(lambda _: start.spawn_tried.set())  # it could not start
        try:
            await start.spawn_tried.wait()
            self._store = await asyncio.to_thread(self._open_store)
            self.loop = await self._stored(self.store.create_loop, self.loop)
            self._open_store = None
            await self._begin()
            start.recordable = True
            if start.spawned:  # else once it has (or, if it cannot start, with its failure)
                self._begin_iteration(start)
        except BaseException:
            self.control.force.set()  # nothing can be recorded: do not leave the agent running
            with contextlib.suppress(BaseException):
                await agent
            raise

    async def _run_agent(
        self, n: int, prompt: str, session_id: str, start: _Start, transcript: TranscriptRecorder
    ) -> IterationResult:
        request = agent_request(
            self.config,
            prompt=prompt,
            workdir=self.workdir,
            iteration=n,
            session_id=session_id,
            remaining_cost_usd=remaining(self._totals(), self.config.budgets).cost_usd,
            prompt_path=prompt_path(self.loop.id, n, session_id),
        )
        command = self.adapter.build_command(request)
        command = replace(
            command,
            env={**command.env, "RALPHCTL_ITERATION": str(n), "RALPHCTL_LOOP_ID": self.loop.id},
        )
        command = loop_command(command, self.config, self.workdir)
        await self._settle()  # the last iteration's record, written while this one was prepared
        try:
            return await run_agent(
                command,
                ParserOnFirstLine(self.adapter.new_parser),
                cwd=self.workdir,
                timeout=self._iteration_timeout(),
                on_event=lambda event: self._agent_event(n, event, transcript),
                on_spawn=lambda pid, at: self._spawned(start, pid, at),
                on_output=transcript.write,
                interrupt=self.control.interrupt,
                force=self.control.force,
            )
        finally:  # the cooldown counts from here (a new loop's store may still be opening)
            self._agent_ended = time.monotonic()

    async def _checkpoint(self, n: int) -> None:
        """The checkpoint at the end of a run, after its last iteration's record."""
        outcome = await self._commit_checkpoint(n)
        if outcome.sha:
            await self._stored(
                self.store.add_checkpoint, self.loop.id, n, outcome.sha, self._summary()
            )
            await self._publish(EventType.CHECKPOINT_CREATED, _checkpointed(n, outcome.sha))
        elif outcome.error:
            await self._checkpoint_failed(n, outcome.error)

    async def _commit_checkpoint(self, n: int) -> CheckpointOutcome:
        from ralphctl.engine.checkpoint import CheckpointMemory, create_checkpoint

        if self._checkpoint_memory is None:
            self._checkpoint_memory = CheckpointMemory()
        return await create_checkpoint(
            self.workdir,
            n,
            branch=self.config.checkpoint_branch,
            staged=self._progress.staged(),  # no hook runs: the files stay as they are
            memory=self._checkpoint_memory,
        )

    async def _checkpoint_failed(self, n: int, error: str) -> None:
        await self._settle()
        await self._stored(self.store.add_error, self.loop.id, n, "checkpoint", error, {})
        await self._publish(EventType.ERROR, {"iteration": n, "message": error})

    async def _record(
        self,
        start: _Start,
        result: IterationResult,
        assessment: Assessment | None,
        transcript: TranscriptSummary | None = None,
        checkpoint: str | None = None,
        *,
        defer: bool = False,
    ) -> None:
        """Record the finished iteration, with the sha of its ``checkpoint`` if one was made
        (in one transaction: on a fleet worker, the one that pushes it). ``defer``: an
        iteration that went well is only queued on the store's thread, written while the next
        one is prepared; whatever comes next waits for it (``_settle``) before it starts an
        agent or writes to the store itself."""
        from ralphctl.domain.breaker import BreakerStatus
        from ralphctl.domain.breaker import to_dict as breaker_to_dict
        from ralphctl.engine.record import (
            error_context,
            error_text,
            error_type,
            finished_iteration,
            iteration_events,
            loop_totals,
            output_events,
        )
        from ralphctl.engine.unrecorded import keep, loop_state

        done = finished_iteration(start.record, result, assessment)
        was_open = self._breaker.status is BreakerStatus.OPEN
        if assessment is not None:
            self._breaker = assessment.breaker
            self._notes = assessment.notes
            if assessment.usage_limit is not None:
                self._parked_until = datetime.fromtimestamp(assessment.usage_limit.resets_at, UTC)
                self._parked_reason = f"usage limit ({assessment.usage_limit.source})"
        self.loop = loop_totals(
            self.loop, done, runtime_s=self._runtime(), breaker=breaker_to_dict(self._breaker)
        )
        events = iteration_events(done, result, self.loop, self.config.permission_mode)
        events += self._guard_events(done, result, assessment, was_open)
        events += self._budget_events(done.n)
        events += output_events(done.n, result, transcript)
        if checkpoint is not None:
            events.append((EventType.CHECKPOINT_CREATED, _checkpointed(done.n, checkpoint)))
        complete = functools.partial(
            self.store.complete_iteration, done, self.loop, events, checkpoint
        )
        begun = start.begun
        if defer and done.status == "ok" and _succeeded(begun):
            completing = storethread.submit_delivering(self.store, self._deliver, complete)
            state = loop_state(self.loop)
            self._unsettled = asyncio.ensure_future(
                self._kept_if_failed(completing, done, events, state)
            )
            self._history.append(done)
            self._write_state()
            return
        try:
            if begun is not None:
                await begun
            if done.status in ("error", "timeout"):
                context = error_context(result, retry=self.loop.consecutive_errors)
                kind, text = error_type(result), error_text(done)
                await self._stored(self.store.add_error, self.loop.id, done.n, kind, text, context)
            await storethread.submit_delivering(self.store, self._deliver, complete)
        except StoreError:  # the run ends here; what the agent spent is kept for the next one
            if begun is None or begun.exception() is not None:
                events = [_started_event(done.n, start.messages), *events]
            await asyncio.to_thread(keep, self.workdir, done, events, loop_state(self.loop))
            raise
        self._history.append(done)
        self._write_state()

    async def _kept_if_failed(
        self,
        completing: asyncio.Future[list[EventRecord]],
        done: IterationRecord,
        events: list[tuple[str, dict[str, Any]]],
        state: dict[str, Any],
    ) -> None:
        try:
            await completing
        except StoreError:  # as in _record: kept for the next runner
            from ralphctl.engine.unrecorded import keep

            await asyncio.to_thread(keep, self.workdir, done, events, state)
            raise

    async def _settle(self) -> None:
        """Wait for a deferred record (``_record``); StoreError, once kept, if it failed."""
        unsettled, self._unsettled = self._unsettled, None
        if unsettled is not None:
            await unsettled

    def _guard_events(
        self,
        done: IterationRecord,
        result: IterationResult,
        assessment: Assessment | None,
        was_open: bool,
    ) -> list[tuple[str, dict[str, Any]]]:
        events: list[tuple[str, dict[str, Any]]] = []
        if assessment is None:
            return events
        from ralphctl.domain.usage_limits import usage_warning

        n = done.n
        warning = usage_warning(result)
        if warning is not None and assessment.usage_limit is None:
            message = f"close to the agent's usage limit ({warning.limit_type or 'unknown'})"
            events.append((EventType.WARNING, {"iteration": n, "message": message}))
        if assessment.tripped and not was_open:
            breaker = {"reason": assessment.breaker.reason, "cause": assessment.breaker.cause}
            events.append((EventType.CIRCUIT_BREAKER_TRIPPED, {"iteration": n, **breaker}))
        if assessment.claimed and not assessment.completed:
            message = "completion claimed but a verification gate failed; the loop goes on"
            events.append((EventType.WARNING, {"iteration": n, "message": message}))
        if (question := assessment.signals.question) is not None:
            asked = {"iteration": n, "question": question, "on_question": self.config.on_question}
            events.append((EventType.QUESTION, asked))
        for model in assessment.cost.unpriced:
            if model not in self._unpriced_warned:
                self._unpriced_warned.add(model)
                message = f"no price for model {model!r}: tokens are recorded, cost is not"
                events.append((EventType.WARNING, {"iteration": n, "message": message}))
        if assessment.usage_limit is not None:
            limit = assessment.usage_limit
            until = datetime.fromtimestamp(limit.resets_at, UTC).isoformat()
            message = f"usage limit reached ({limit.source}); waiting until {until}"
            events.append((EventType.WARNING, {"iteration": n, "message": message}))
        return [(str(kind), data) for kind, data in events]

    def _budget_events(self, n: int) -> list[tuple[str, dict[str, Any]]]:
        """A ``budget_warning`` for each budget 80 % spent, once per budget and loop."""
        found = budget_warnings(self._totals(), self.config.budgets, self._budgets_warned)
        self._budgets_warned.update(warning["budget"] for warning in found)
        return [(str(EventType.BUDGET_WARNING), {"iteration": n, **data}) for data in found]

    # -- loop lifecycle ------------------------------------------------------------------

    async def _begin(self) -> None:
        from ralphctl.domain.breaker import allow_trial
        from ralphctl.domain.breaker import from_dict as breaker_from_dict
        from ralphctl.domain.breaker import to_dict as breaker_to_dict

        leftovers = await self._leftovers()
        if leftovers.loop_state is not None:  # the journal's iteration was the newest
            caught_up = leftovers.applied_to(self.loop)
            self._breaker = breaker_from_dict(caught_up.breaker_state or {})
            self._runtime_base = caught_up.runtime_s
        resumed = self.loop.started_at is not None
        if resumed:
            said = [str(EventType.BUDGET_WARNING)]
            warned = await self._stored(self.store.events_of, self.loop.id, said)
            self._budgets_warned = {str(event.data.get("budget")) for event in warned}
        if self.loop.status is LoopStatus.RATE_LIMITED and self.loop.rate_limited_until:
            self._parked_until = self.loop.rate_limited_until  # still waits after a restart
            self._parked_reason = self.loop.stop_detail or "rate limited"
        if self.loop.status is LoopStatus.FAILED:  # resumed after a trip: one trial iteration
            reason = "resumed by the user"
            self._breaker = allow_trial(
                self._breaker, self.config.breaker, time.time(), reason=reason
            )
        if self.loop.status is not LoopStatus.RUNNING:
            transition(self.loop.status, LoopStatus.RUNNING)
        self.loop = replace(
            leftovers.applied_to(self.loop),
            status=LoopStatus.RUNNING,
            stop_reason=None,
            stop_detail=None,
            ended_at=None,
            started_at=self.loop.started_at or _now(),
            runner_pid=os.getpid(),
            runner_host=socket.gethostname(),
            breaker_state=breaker_to_dict(self._breaker),
        )
        data: dict[str, Any] = {"iteration": self.loop.iteration, "config": self.config.to_json()}
        if leftovers.interrupted:
            data["interrupted_iterations"] = leftovers.interrupted
        await self._save(self.loop, (EventType.RESUMED if resumed else EventType.STARTED, data))
        self._history = await self._stored(self.store.iterations, self.loop.id)
        if leftovers.changed:  # one warning
            agents = [agent.data() for agent in leftovers.agents]
            data = {"message": leftovers.message(), "agents": agents}
            await self._publish(EventType.WARNING, data)
        for message in ignored_settings(self.config, self.adapter):
            await self._publish(EventType.WARNING, {"message": message})
        if unconfined := bypass_warning(self.config, self.adapter):
            await self._publish(EventType.WARNING, {"message": unconfined})
        problem = check_state_file(self.workdir)
        if problem:
            await self._publish(EventType.WARNING, {"message": problem})
        problem = await asyncio.to_thread(self._apply_retention)
        if problem:
            await self._publish(EventType.WARNING, {"message": problem})
        self._write_state()
        if self._git is None:  # a fresh loop looked before its first agent
            self._git = await self._progress.is_work_tree()
        if self.config.checkpoint_interval and not self._git:
            self._checkpoints = False
            await self._publish(
                EventType.WARNING,
                {"message": f"{self.workdir} is not a git work tree: checkpoints are off"},
            )

    def _apply_retention(self) -> str | None:
        # Imported here: it imports the store's SQLAlchemy queries, which a new loop's runner
        # imports only once its first agent runs (start-up budget).
        from ralphctl.engine.transcript_retention import apply_transcript_retention

        return apply_transcript_retention(self.store, self.workdir)

    async def _leftovers(self) -> Leftovers:
        """Iterations a runner that died left running: their agents stopped (off the event
        loop: that takes a moment), then marked interrupted."""
        # Imported here: a new loop has none (start-up budget).
        from ralphctl.engine.leftovers import Leftovers, interrupt_leftovers
        from ralphctl.engine.unrecorded import has_journal

        kept = has_journal(self.workdir, self.loop.id)
        if not kept and not await self._stored(self.store.running_iterations, self.loop.id):
            return Leftovers()
        found = await asyncio.to_thread(interrupt_leftovers, self.store, [self.loop])
        return found[self.loop.id]

    async def _end(self, decision: Decision) -> LoopRecord:
        await self._settle()
        if decision is INTERRUPTED:
            if self.control.outcome is Interruption.SUSPEND:
                return await self._suspend()
            decision = _INTERRUPT_DECISIONS[self.control.outcome]
        if decision.action is Action.PAUSE:
            status, reason = LoopStatus.PAUSED, None
        else:
            assert decision.reason is not None
            status, reason = decision.reason.status, decision.reason
        transition(self.loop.status, status)
        if self._checkpoints and self.loop.iteration:
            await self._checkpoint(self.loop.iteration)
        ended = replace(
            self.loop,
            status=status,
            stop_reason=reason,
            stop_detail=decision.detail,
            ended_at=None if status is LoopStatus.PAUSED else _now(),
            runtime_s=self._runtime(),
            runner_pid=None,
        )
        why = reason and str(reason)
        changed = {"status": str(status), "reason": why, "detail": decision.detail}
        await self._settle_state(
            ended,
            (EventType.STATE_CHANGED, changed),
            (_END_EVENT[status], {"reason": why, **loop_summary(ended)}),
        )
        return self.loop

    async def _suspend(self) -> LoopRecord:
        """Leave the loop active with no runner: the next runner continues where it stands."""
        left = replace(self.loop, runtime_s=self._runtime(), runner_pid=None)
        data = {"status": str(left.status), **loop_summary(left)}
        await self._settle_state(left, (EventType.SUSPENDED, data))
        return self.loop

    async def _settle_state(
        self, ended: LoopRecord, *events: tuple[EventType, dict[str, Any]]
    ) -> None:
        """Write the state file of ``ended``, then store it with ``events``: once another
        runner may take the loop over, this one writes nothing more and has nothing left to
        wait for."""
        self.loop = ended
        self._write_state()
        await self._state.flush()
        await self._save(ended, *events)

    async def _save(self, loop: LoopRecord, *events: tuple[EventType, dict[str, Any]]) -> None:
        """Store ``loop`` and ``events`` in one transaction (a kill never splits a change of
        state from its events); the events are published."""
        batch = [(str(kind), data) for kind, data in events]
        save = self.store.save_loop_with_events
        self.loop, _ = await storethread.submit_delivering(
            self.store, self._deliver_saved, save, loop, batch
        )

    def _pause_after(self, result: IterationResult) -> float:
        """The cooldown, stretched after errors: 2^n seconds (capped) for the n-th in a row."""
        errors = self.loop.consecutive_errors
        if not result.is_error or errors == 0:
            return self.config.cooldown
        delay = backoff_delay(
            errors - 1, base=self.config.error_backoff_base, cap=self.config.error_backoff_cap
        )
        return max(self.config.cooldown, delay)

    async def _cooldown(self, seconds: float) -> bool:
        """Wait until ``seconds`` after the last agent exited (the iteration's record, look and
        checkpoint take their time within it); True if interrupted meanwhile."""
        if self._agent_ended is not None:
            seconds -= time.monotonic() - self._agent_ended
        return await self._sleep(seconds)

    async def _sleep(self, seconds: float) -> bool:
        """Sleep unless interrupted; True if interrupted."""
        if seconds <= 0:
            return self.control.interrupt.is_set()
        self._messages_slept = True
        return await wait_set(self.control.interrupt, seconds)

    # -- helpers -------------------------------------------------------------------------

    def _checkpoint_due(self, n: int, result: IterationResult) -> bool:
        interval = self.config.checkpoint_interval
        return self._checkpoints and n % interval == 0 and not result.interrupted

    def _look(self, checkpoint: bool) -> asyncio.Future[str | None]:
        """Start the look at the files after an iteration (staged when a checkpoint follows),
        and, on the store's thread meanwhile, the read of the next prompt's messages."""
        if self.stored:
            self._early_messages = storethread.submit(self.store, self._inbox.pending, self.store)
            self._messages_slept = False
        return asyncio.ensure_future(self._progress.after(stage=checkpoint))

    async def _messages(self) -> list[Message]:
        """The messages this iteration's prompt gives the agent: those read early, unless the
        loop slept since (then read again: new ones may have come meanwhile)."""
        early, self._early_messages = self._early_messages, None
        if early is not None:
            told = await early
            if not self._messages_slept:
                return told
        return await self._stored(self._inbox.pending, self.store) if self.stored else []

    def _make_tracker(self) -> None:
        """Create the loop's tracker from its template if it has none yet (a resumed loop
        keeps its own). A failure is told once the iteration is recorded."""
        if self._tracker is None or self.config.tracker_template is None:
            return
        try:
            self._tracker.create(self.config.tracker_template)
        except OSError as exc:
            self._tracker_problem = f"cannot create {self._tracker.relative}: {exc}"

    async def _tracker_declaration(self, n: int) -> Detection | None:
        """What the loop's tracker declares after iteration ``n`` (a warning if unreadable)."""
        from ralphctl.engine.fresh_tracker import TrackerUnreadable

        assert self._tracker is not None
        problem, self._tracker_problem = self._tracker_problem, None
        declared = None
        try:
            declared = self._tracker.declaration(self.config.marker)
        except TrackerUnreadable as exc:
            problem = str(exc)
        if problem:
            await self._publish(
                EventType.WARNING, {"iteration": n, "message": f"tracker: {problem}"}
            )
        return declared

    def _prompt(self, n: int, told: list[str]) -> str:
        last = self._history[-1] if self._history else None
        return build_prompt(
            PromptContext(
                task=self.loop.task,
                iteration=n,
                max_iterations=self.config.max_iterations,
                remaining=remaining(self._totals(), self.config.budgets),
                marker=self.config.marker,
                history=[
                    PastIteration(it.n, it.status, (it.duration_ms or 0) / 1000, it.output_summary)
                    for it in self._history[-HISTORY_SHOWN:]  # what the prompt shows
                ],
                last_error=last.error_message if last and last.status != "ok" else None,
                # a message from the user may be the answer the note says nobody gives
                notes=tuple(n for n in self._notes if not told or n != NO_HUMAN_NOTE),
                tracker=None if self._tracker is None else self._tracker.relative,
                continue_message=self.config.continue_message,
                messages=told,
            )
        )

    def _totals(self) -> Totals:
        return Totals(
            iterations=self.loop.iteration,
            runtime_s=self._runtime(),
            cost_usd=self.loop.cost_usd,
            tokens=self._loop_tokens().counted(include_cache=self.config.count_cache_tokens),
            consecutive_errors=self.loop.consecutive_errors,
        )

    def _loop_tokens(self) -> TokenUsage:
        loop = self.loop
        return TokenUsage(
            loop.tokens_input, loop.tokens_output, loop.tokens_cache_read, loop.tokens_cache_write
        )

    def _runtime(self) -> float:
        return self._runtime_base + (time.monotonic() - self._segment_start)

    def _iteration_timeout(self) -> float:
        left = remaining(self._totals(), self.config.budgets).runtime_s
        timeout = self.config.iteration_timeout
        return max(MIN_ITERATION_TIMEOUT_S, timeout if left is None else min(timeout, left))

    def _summary(self) -> dict[str, Any]:
        return loop_summary(self.loop)

    async def _stored(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``call`` (a store call) run on the store's thread: the event loop never waits on
        the database (``engine/storethread``)."""
        return await storethread.run(self.store, call, *args, **kwargs)

    async def _publish(self, event_type: EventType, data: dict[str, Any]) -> None:
        """Store the event; it is published from the store's thread (``engine/storethread``)."""
        kind, append = str(event_type), self.store.append_event
        await storethread.submit_delivering(
            self.store, self._deliver_one, append, self.loop.id, kind, data
        )

    def _deliver(self, stored: list[EventRecord]) -> None:
        if self.observer:
            for record in stored:
                self.observer.on_event(record)

    def _deliver_one(self, stored: EventRecord) -> None:
        self._deliver([stored])

    def _deliver_saved(self, saved: tuple[LoopRecord, list[EventRecord]]) -> None:
        self._deliver(saved[1])

    def _agent_event(self, n: int, event: AgentEvent, transcript: TranscriptRecorder) -> None:
        from ralphctl.agents.events import Finished  # with the parser, after the spawn

        if isinstance(event, Finished):  # written at once: what the agent reported survives a kill
            transcript.flush()
        if self.observer:
            self.observer.on_agent_event(n, event)

    def _write_state(self) -> None:
        self._state.submit(self.loop, self._history)

    def _state_failed(self, exc: OSError) -> None:
        """Called back by the state writer: the warning is queued, published once stored."""
        data = {"message": f"cannot write .ralph/state.json: {exc.strerror or exc}"}
        kind, append = str(EventType.WARNING), self.store.append_event
        stored = storethread.submit_delivering(
            self.store, self._deliver_one, append, self.loop.id, kind, data
        )
        stored.add_done_callback(self._warning_unstored)

    def _warning_unstored(self, stored: asyncio.Future[EventRecord]) -> None:
        try:
            stored.result()
        except StoreError as exc:  # the next write of the loop meets the failure too
            log.warning("loop %s: cannot record a warning: %s", self.loop.id, exc)


_END_EVENT = {
    LoopStatus.COMPLETED: EventType.COMPLETED,
    LoopStatus.BLOCKED: EventType.BLOCKED,
    LoopStatus.STOPPED: EventType.STOPPED,
    LoopStatus.FAILED: EventType.FAILED,
    LoopStatus.PAUSED: EventType.PAUSED,
}


def _now() -> datetime:
    return datetime.now(UTC)


def _succeeded(future: asyncio.Future[Any] | None) -> bool:
    """Whether ``future`` is done and did not fail."""
    return (
        future is not None and future.done() and not future.cancelled() and not future.exception()
    )


def _declared_done(iteration: IterationRecord) -> bool:
    """Whether ``iteration`` ended its loop as completed: the agent declared completion, and
    every gate passed (completion outranks every other way to end)."""
    gates = iteration.gate_results or []
    passed = all(gate.get("passed") for gate in gates)
    return iteration.status == "ok" and iteration.completion_signal_found and passed


def _checkpointed(n: int, sha: str) -> dict[str, Any]:
    return {"iteration": n, "commit_sha": sha}


def _started_event(n: int, messages: tuple[int, ...] = ()) -> tuple[str, dict[str, Any]]:
    """An iteration's start event: the seqs of the user's messages it delivers, if any."""
    data: dict[str, Any] = {"iteration": n}
    if messages:
        data[DELIVERED_KEY] = list(messages)
    return str(EventType.ITERATION_STARTED), data
