"""The hook-mode loop: one agent session kept going by its Stop hook, decided here.

The session's Stop hook forwards every Stop to this runner (``server``), which decides and
records it (``stops``). An agent that names its sessions itself (Codex) has its id adopted
as soon as the runner learns it (``adoption``). When the agent process ends while the loop
is still active, the agent ended the session by itself: after a block (its block cap) the
session is resumed with the loop's continue message; after an error (or without a Stop) the
running iteration is recorded as an error and the session resumed after a back-off, until
the circuit breaker's threshold of consecutive errors. A run ended by a usage limit is no error:
the loop is parked until the limit resets, then the same session goes on (``parking``). With
``on_question = wait`` a Stop that asks the user something ends the session's turn; the loop
is paused until the answer, then the same session goes on with it (``answers``). Every
resume is bounded by the budgets.

A pause ends the session's turn at a Stop (or at once, interrupting it); the loop's next
runner continues the same session with ``--resume``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ralphctl.agents.base import AgentAdapter, AgentUnavailable
from ralphctl.agents.events import AgentEvent, SessionStarted
from ralphctl.agents.process import run_agent
from ralphctl.agents.registry import spec_for
from ralphctl.domain.backoff import backoff_delay
from ralphctl.domain.conditions import Action, Decision, ExternalSignal, evaluate, remaining
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.model import IterationResult, ModelTokens
from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.domain.stoprules import Budgets, Totals
from ralphctl.domain.usage_limits import UsageLimit
from ralphctl.engine.hookmode.adoption import AdoptionError, move_session
from ralphctl.engine.hookmode.answers import Asked, answered_prompt, wait_for_answer
from ralphctl.engine.hookmode.attribution import SessionTotals
from ralphctl.engine.hookmode.guards import HookBreaker
from ralphctl.engine.hookmode.history import History
from ralphctl.engine.hookmode.parking import limit_detail, session_usage_limit, wait_out
from ralphctl.engine.hookmode.server import StopServer
from ralphctl.engine.hookmode.session import Session, session_command
from ralphctl.engine.hookmode.sockets import listening_path
from ralphctl.engine.hookmode.stops import Stops
from ralphctl.engine.hookmode.trackerfile import TrackerFile
from ralphctl.engine.hookmode.usage import MeteredParser
from ralphctl.engine.request import ignored_settings
from ralphctl.engine.runner import INTERRUPTED, Interruption, LoopObserver, RunControl
from ralphctl.engine.sandboxing import bypass_warning
from ralphctl.engine.transcript_writer import SessionTranscripts
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.stop import BLOCK
from ralphctl.hook.tracker import TrackerError
from ralphctl.store.records import LoopRecord

if TYPE_CHECKING:
    from ralphctl.store.repository import Store

MIN_RUN_TIMEOUT_S = 1.0
STOP_REQUESTED = Decision(Action.STOP, StopReason.USER_STOP, "stop requested")
PAUSED = Decision(Action.PAUSE, None, "pause requested")
#: What an interrupt makes of a hook-mode loop (else: stopped, ``interrupted``).
_INTERRUPTED_AS = {
    Interruption.STOP: STOP_REQUESTED,
    Interruption.PAUSE: PAUSED,
    Interruption.SUSPEND: Decision(Action.PAUSE, None, "paused as its runner shut down"),
}
#: What a stop or pause request that ends a usage-limit wait makes of the loop.
_REQUESTED = {ExternalSignal.STOP: STOP_REQUESTED, ExternalSignal.PAUSE: PAUSED}
#: How each agent CLI may end a session by itself after a block.
CLI_ENDS = {
    "claude": "Claude Code ended the session itself after a block (its block cap, "
    "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP, or its own limits)",
    "codex": "Codex ended the session itself after a block (it has no block cap: "
    "its own limits, or an error it did not report)",
}


def capped_message(agent: str) -> str:
    """The warning for a session the agent ended itself after our block."""
    ended = CLI_ENDS.get(agent, f"the {agent} CLI ended the session itself after a block")
    return f"{ended}: that is not a completion; resuming the session"


class HookLoopRunner:
    """Runs one hook-mode loop until it ends or pauses; ``control`` interrupts it: ends the
    session's turn, and the loop as stopped (``user_stop`` for ``Interruption.STOP``,
    ``interrupted`` for ``Interruption.INTERRUPTED``) or paused (``PAUSE``, ``SUSPEND``).
    ``external`` is asked for stop and pause requests at each Stop."""

    def __init__(
        self,
        store: Store,
        adapter: AgentAdapter,
        loop: LoopRecord,
        config: LoopConfig,
        session: Session,
        *,
        observer: LoopObserver | None = None,
        control: RunControl | None = None,
        external: Callable[[], ExternalSignal | None] | None = None,
    ) -> None:
        self.adapter = adapter
        self.config = config
        self.session = session
        self.observer = observer
        self.control = control or RunControl()
        self.history = History(store, loop, config, observer=observer)
        self.tracker = TrackerFile(session.tracker, self.history.warn)
        meter = MeteredParser(adapter.new_parser(), config.prices)
        self.breaker = HookBreaker(self.history, config.breaker)
        self.stops = Stops(
            self.history, session, self.tracker, config, self.control, meter, self.breaker, external
        )
        self.history.on_failure = self.stops.recording_failed  # its writes are queued
        # A paused session's reported totals so far are what the loop has recorded.
        self._runs = SessionTotals(config.prices, self.history.tokens(), loop.cost_usd)
        # the agent's id for the session is known (chosen by ralphctl, or adopted)
        self._adopted = session.resume or not adapter.capabilities.chooses_session_id
        if not self._adopted:
            self.stops.adopt = self._adopt
        self._told: str | None = None  # the next run's prompt, if not the continue message

    @property
    def loop(self) -> LoopRecord:
        return self.history.loop

    @property
    def stored(self) -> bool:
        """The loop is in the store from the start (``setup.prepare`` created it)."""
        return True

    async def run(self) -> LoopRecord:
        """Run the session until the loop ends; returns the final record."""
        history = self.history
        await history.begin_loop(
            {"session_id": self.session.session_id, "tracker": self.tracker.path}
        )
        for message in ignored_settings(self.config, self.adapter):
            history.warn(message)
        if unconfined := bypass_warning(self.config, self.adapter):
            history.warn(unconfined)
        try:
            with listening_path(self.loop.id) as socket_path:
                on_stop = self.stops.on_stop
                async with StopServer(socket_path, on_stop, on_error=history.warn) as server:
                    decision = await self._drive(socket_path, server)
            if history.open is not None:  # begun at a block, never run: the session ended first
                history.complete("interrupted", error="the loop ended before this iteration ran")
            if decision is INTERRUPTED:
                decision = _INTERRUPTED_AS.get(self.control.outcome, decision)
            return await history.end(decision)
        finally:
            fields = self.tracker.fields()
            paused = self.loop.status is LoopStatus.PAUSED
            if fields is not None and fields.get("active") is True:  # no Stop hook goes on
                if paused:
                    self.tracker.pause(iteration=self.loop.iteration)
                else:
                    self.tracker.end(self.loop.stop_reason or StopReason.INTERRUPTED)
            elif fields is not None and fields.get("paused") is True and not paused:
                # ended while waiting for an answer: the session is not continued
                self.tracker.end(self.loop.stop_reason or StopReason.INTERRUPTED, paused=False)
            self.breaker.close()
            await history.flush()

    async def _drive(self, socket_path: str, server: StopServer) -> Decision:
        prompt, resume = self.session.prompt, self.session.resume
        await self.breaker.start()
        self.history.begin(self.loop.iteration + 1)
        while True:
            try:
                result = await self._run(prompt, resume, socket_path)
            except AgentUnavailable as exc:
                self.history.complete("error", error=str(exc))
                return Decision(Action.STOP, StopReason.AGENT_UNAVAILABLE, str(exc))
            await server.settled()  # the last Stops are recorded before the end is judged
            await self.history.written()
            if self.stops.fatal is not None:
                raise self.stops.fatal
            decision = await self._after_run(result, resume)
            if decision is not None:
                return decision
            prompt, resume = self._told or self.tracker.continue_message(), True
            self._told = None
            if not self._adopted:  # the agent ended before naming the session: start it anew
                prompt, resume = self.session.prompt, False

    async def _run(self, prompt: str, resume: bool, socket_path: str) -> IterationResult:
        parser, prices = self.adapter.new_parser(), self.config.prices
        meter = MeteredParser(parser, prices, self._recorded_since(datetime.now(UTC)))
        self.stops.new_run(meter)
        left = remaining(self._totals(), self.config.budgets)
        command = session_command(
            self.adapter,
            self.session,
            self.config,
            prompt=prompt,
            resume=resume,
            iteration=self.history.running(),
            remaining_cost_usd=left.cost_usd,
            socket_path=socket_path,
            loop_id=self.loop.id,
            workdir=self.history.workdir,
        )
        transcripts = SessionTranscripts(self.history.store, self.loop.id, self._output_iteration)
        try:
            return await run_agent(
                command,
                meter,
                cwd=self.history.workdir,
                timeout=None if left.runtime_s is None else max(MIN_RUN_TIMEOUT_S, left.runtime_s),
                on_event=self._agent_event,
                on_spawn=self.history.agent_started,
                on_output=transcripts.write,
                interrupt=self.control.interrupt,
                force=self.control.force,
            )
        finally:
            await transcripts.close()
            for problem in transcripts.problems:
                self.history.warn(problem)
            self.history.agent_ended()

    async def _after_run(self, result: IterationResult, resumed: bool) -> Decision | None:
        """The agent process ended: the loop's end, or None to resume the session."""
        stops, history = self.stops, self.history
        interrupted = self.control.interrupt.is_set()
        fields = self.tracker.fields()
        if stops.ended is None and not interrupted and fields is not None:
            stops.catch_up_with(fields)
        active = fields is not None and fields.get("active") is True
        capped = self._capped(result, fields, interrupted)
        limit = None
        if history.open is not None and not capped and stops.ended is None:
            limit = None if interrupted else self._usage_limit(result)
            if limit is None:
                self._cut_short(result, interrupted)
            else:
                self._parked(result, limit)
        history.settle(self._runs.of_run(result, stops.meter.reported, resumed=resumed))
        await self.breaker.settled()
        if stops.ended is not None:
            return stops.ended
        if stops.paused:
            return PAUSED
        if interrupted:
            return INTERRUPTED
        if fields is None:
            return Decision(Action.STOP, StopReason.USER_STOP, "the loop's tracker was removed")
        if stops.asked is not None:
            return await self._after_question(stops.asked)
        if not active:
            return _ended_by_tracker(fields)
        if (trip := self.breaker.tripped) is not None:
            return Decision(Action.STOP, StopReason.CIRCUIT_BREAKER, trip)
        decision = evaluate(self._totals(), self._budgets())
        if decision.action is not Action.CONTINUE:
            return decision
        if capped:
            history.warn(capped_message(self.adapter.name))
            return None
        if limit is not None:
            signal = await wait_out(history, limit, self.control.interrupt, stops.external)
            if self.control.interrupt.is_set():
                return INTERRUPTED
            if signal is not None:
                return _REQUESTED[signal]
            waited = evaluate(self._totals(), self._budgets())  # the runtime ran on meanwhile
            if waited.action is not Action.CONTINUE:
                return waited
        elif await self._back_off():
            return INTERRUPTED
        following = self.loop.iteration + 1
        self.tracker.update({"iteration": following, "last_decision": None})
        history.begin(following)
        return None

    async def _after_question(self, asked: Asked) -> Decision | None:
        """The session stopped at the agent's question (``on_question = wait``): the loop's
        end, or None once answered (or timed out) to resume the session with the answer."""
        decision = self._judged()
        if decision is not None:
            return decision
        timeout = self.config.question_timeout
        interrupt = self.control.interrupt
        answer = await wait_for_answer(self.history, asked, timeout, interrupt, self.stops.external)
        if interrupt.is_set():
            return INTERRUPTED
        if answer.signal is not None:
            return _REQUESTED[answer.signal]
        decision = self._judged()  # the runtime ran on meanwhile
        if decision is not None:
            return decision
        told = {m.seq: m.text for m in answer.messages} | dict(self.tracker.take_inbox())
        following = self.loop.iteration + 1
        changes: dict[str, Scalar] = {"active": True, "paused": False, "last_decision": None}
        self.tracker.update(changes | {"iteration": following})
        self.history.begin(following, sorted(told))
        texts = [told[seq] for seq in sorted(told)]
        self._told = answered_prompt(self.tracker.continue_message(), asked, texts)
        return None

    def _judged(self) -> Decision | None:
        """The loop's end if its breaker has tripped or a budget is spent, else None."""
        if (trip := self.breaker.tripped) is not None:
            return Decision(Action.STOP, StopReason.CIRCUIT_BREAKER, trip)
        decision = evaluate(self._totals(), self._budgets())
        return None if decision.action is Action.CONTINUE else decision

    def _capped(
        self, result: IterationResult, fields: dict[str, Scalar] | None, interrupted: bool
    ) -> bool:
        """Our last word in this run was block, yet the session ended: not a completion."""
        return (
            fields is not None
            and fields.get("active") is True
            and fields.get("last_decision") == BLOCK
            and self.stops.decided > 0
            and self.stops.ended is None
            and not (interrupted or result.timed_out or result.is_error)
        )

    def _cut_short(self, result: IterationResult, interrupted: bool) -> None:
        """The running iteration ended without a Stop: interrupted, timed out or failed."""
        usage = self.stops.meter.take()
        if interrupted:
            status, error = "interrupted", "interrupted: the agent was stopped on request"
        elif result.timed_out:
            status, error = "timeout", "the session reached the loop's runtime limit"
        else:
            status = "error"
            error = result.error_message or "the session ended without a Stop reaching ralphctl"
            kind = f"api_error_{result.api_error_status}" if result.api_error_status else "agent"
            context = {"exit_code": result.exit_code, "stderr_tail": result.stderr_tail[-4000:]}
            self.history.error(kind, error, context)
        activity = self.stops.activity.take()
        n = self.history.running()
        self.history.complete(
            status, result.final_text, usage, error=error, denials=activity.denials
        )
        if not interrupted:  # the run's result spans the session: judge this iteration's part
            iteration = replace(
                result, tool_uses=activity.tool_uses, permission_denials=activity.denials
            )
            self.breaker.judge(n, iteration)

    def _usage_limit(self, result: IterationResult) -> UsageLimit | None:
        """The usage limit that ended the session's run: the loop is parked, not failed."""
        if not result.is_error or result.timed_out:
            return None
        return session_usage_limit(result, self.config.usage_limit_wait)

    def _parked(self, result: IterationResult, limit: UsageLimit) -> None:
        """The running iteration was cut short by a usage limit: recorded, but no error."""
        usage, denials = self.stops.meter.take(), self.stops.activity.take().denials
        detail = limit_detail(limit)
        self.history.complete(
            "rate_limited", result.final_text, usage, error=detail, denials=denials
        )

    async def _back_off(self) -> bool:
        """Wait before resuming after an error; True if interrupted meanwhile."""
        errors = max(1, self.loop.consecutive_errors)
        delay = backoff_delay(
            errors - 1, base=self.config.error_backoff_base, cap=self.config.error_backoff_cap
        )
        if delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.control.interrupt.wait(), delay)
        return self.control.interrupt.is_set()

    def _budgets(self) -> Budgets:
        budgets = self.config.budgets
        return Budgets(
            max_iterations=budgets.max_iterations,
            max_runtime_s=budgets.max_runtime_s,
            max_cost_usd=budgets.max_cost_usd,
            max_tokens=budgets.max_tokens,
            max_consecutive_errors=self.config.circuit_breaker_threshold,
        )

    def _totals(self) -> Totals:
        return self.history.totals()

    def _output_iteration(self) -> int:
        """The iteration the session's output belongs to: the open one; after the last Stop
        (the run's closing lines), the last one."""
        open_ = self.history.open
        return open_.n if open_ else max(self.history.loop.iteration, 1)

    def _recorded_since(self, since: datetime) -> Callable[[], tuple[ModelTokens, ...]] | None:
        """The agent's own record of the session's responses since ``since`` (for a stream
        that shows no usage while it runs), if the agent keeps one."""
        try:
            reader = spec_for(self.adapter.name).session_tokens
        except ValueError:  # not a registered agent
            return None
        if reader is None:
            return None
        read = reader
        return lambda: read(self.session.session_id, since) if self._adopted else ()

    def _adopt(self, session_id: str) -> None:
        """Take the agent's own id for the session (its first ``SessionStarted`` or Stop):
        the tracker moves under it and the loop records it, for the hook and for resuming."""
        if self._adopted:
            return
        self._adopted, self.stops.adopt = True, None
        if session_id == self.session.session_id:
            return
        try:
            path = move_session(str(self.history.workdir), self.tracker.path, session_id)
        except (OSError, TrackerError, AdoptionError) as exc:
            self.history.warn(f"cannot take the agent's session id {session_id!r}: {exc}")
            return
        self.session = replace(self.session, session_id=session_id, tracker=path)
        self.tracker.path = path
        self.stops.session_is(self.session)
        self.history.save_loop(replace(self.loop, agent_session_id=session_id))

    def _agent_event(self, event: AgentEvent) -> None:
        if not self._adopted and isinstance(event, SessionStarted) and event.session_id:
            self._adopt(event.session_id)
        self.stops.on_agent_event(event)
        if self.observer is not None:
            open_ = self.history.open
            self.observer.on_agent_event(open_.n if open_ else self.loop.iteration, event)


def _ended_by_tracker(fields: dict[str, Scalar]) -> Decision:
    """The loop was ended outside the runner: cancelled, or decided by the hook alone."""
    reason = fields.get("ended_reason")
    try:
        return Decision(Action.STOP, StopReason(str(reason)), "ended by its tracker")
    except ValueError:
        detail = f"its tracker ended it: {reason} ({fields.get('problem') or 'no detail'})"
        return Decision(Action.STOP, StopReason.CIRCUIT_BREAKER, detail)
