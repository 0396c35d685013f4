"""The hook-mode loop: one Claude Code session kept going by its Stop hook, decided here.

The session's Stop hook forwards every Stop to this runner (``server``), which decides with
the hook's own code (``hook.handler.respond``), so the tracker stays the one source of truth
and a hook that cannot reach the runner decides exactly as the runner would. Before each
decision the runner writes the live cost and token estimate into the tracker, so every
budget of the brain acts at every Stop; each Stop is recorded as an iteration.

When the ``claude`` process ends while the loop is still active, Claude Code ended the
session by itself: after a block (its block cap) the session is resumed with the loop's
continue message; after an error (or without any Stop) the running iteration is recorded
as an error and the session resumed after a back-off, until the circuit breaker's threshold
of consecutive errors. Every resume is bounded by the loop's budgets.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import time
from functools import partial
from typing import TYPE_CHECKING

from ralphctl.agents.base import AgentAdapter, AgentUnavailable
from ralphctl.agents.events import AgentEvent, PermissionDenied
from ralphctl.agents.process import run_agent
from ralphctl.domain import defaults
from ralphctl.domain.backoff import backoff_delay
from ralphctl.domain.conditions import (
    Action,
    Budgets,
    Decision,
    ExternalSignal,
    Totals,
    evaluate,
    remaining,
)
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.costs import tokens_for_budget
from ralphctl.domain.events import EventType
from ralphctl.domain.model import IterationResult, PermissionDenial, TokenUsage
from ralphctl.domain.states import StopReason
from ralphctl.engine.hookmode.history import History
from ralphctl.engine.hookmode.server import Reply, StopRequest, StopServer
from ralphctl.engine.hookmode.session import Session, session_command
from ralphctl.engine.hookmode.usage import MeteredParser, Usage
from ralphctl.engine.runner import INTERRUPTED, LoopObserver, RunControl
from ralphctl.engine.sentinels import read_sentinel
from ralphctl.hook.clock import iso
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.handler import respond
from ralphctl.hook.record import StopRecord
from ralphctl.hook.state import CorruptTracker, loop_state
from ralphctl.hook.stop import BLOCK
from ralphctl.hook.stopinput import StopInputError, parse
from ralphctl.hook.tracker import TrackerError, load, update_fields
from ralphctl.store.records import LoopRecord

if TYPE_CHECKING:
    from ralphctl.store.repository import Store

MIN_RUN_TIMEOUT_S = 1.0
NOT_OURS = Reply(decided=False)
ALLOW = Reply(decided=True)
DECIDED_ALONE = "(decided by the Stop hook alone: the runner did not answer in time)"
CAPPED = (
    "Claude Code ended the session itself after a block (its block cap, "
    "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP, or its own limits): that is not a completion; "
    "resuming the session"
)


class HookLoopRunner:
    """Runs one hook-mode loop to its end; ``control`` interrupts it (Ctrl-C)."""

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
    ) -> None:
        self.adapter = adapter
        self.config = config
        self.session = session
        self.observer = observer
        self.control = control or RunControl()
        self.history = History(store, loop, config, observer=observer)
        self._hook_env = {
            "CLAUDE_PROJECT_DIR": loop.workdir,
            "CLAUDE_CODE_SESSION_ID": session.session_id,
        }
        self._meter = MeteredParser(adapter.new_parser(), config.prices)
        self._ended: Decision | None = None
        self._last_stop: tuple[bytes, int] | None = None
        self._stops = 0  # Stops this runner decided in the current claude run
        self._denials: list[PermissionDenial] = []
        self._fatal: Exception | None = None
        self._unpriced: set[str] = set()

    @property
    def loop(self) -> LoopRecord:
        return self.history.loop

    @property
    def stored(self) -> bool:
        """The loop is in the store from the start (``prepare`` created it)."""
        return True

    async def run(self) -> LoopRecord:
        """Run the session until the loop ends; returns the final record."""
        history = self.history
        history.begin_loop({"session_id": self.session.session_id, "tracker": self.session.tracker})
        try:
            with tempfile.TemporaryDirectory(prefix="ralphctl-") as private:
                socket_path = os.path.join(private, "stop.sock")
                async with StopServer(socket_path, self._on_stop, on_error=self._warn) as server:
                    decision = await self._drive(socket_path, server)
            if history.open is not None:  # begun at a block, never run: the session ended first
                history.complete("interrupted", error="the loop ended before this iteration ran")
            return history.end(decision)
        finally:
            self._deactivate_tracker()

    # -- the session --------------------------------------------------------------------------

    async def _drive(self, socket_path: str, server: StopServer) -> Decision:
        prompt, resume = self.session.prompt, False
        self.history.begin(1)
        while True:
            try:
                result = await self._run(prompt, resume, socket_path)
            except AgentUnavailable as exc:
                self.history.complete("error", error=str(exc))
                return Decision(Action.STOP, StopReason.AGENT_UNAVAILABLE, str(exc))
            await server.settled()  # the last Stops' recordings, before judging the end
            if self._fatal is not None:
                raise self._fatal
            decision = await self._after_run(result)
            if decision is not None:
                return decision
            prompt, resume = self._continue_message(), True

    async def _run(self, prompt: str, resume: bool, socket_path: str) -> IterationResult:
        self._meter = MeteredParser(self.adapter.new_parser(), self.config.prices)
        self._last_stop, self._stops = None, 0
        command = session_command(
            self.adapter,
            self.session,
            self.config,
            prompt=prompt,
            resume=resume,
            iteration=self._running(),
            remaining_cost_usd=remaining(self._totals(), self.config.budgets).cost_usd,
            socket_path=socket_path,
            loop_id=self.loop.id,
            workdir=self.history.workdir,
        )
        left = remaining(self._totals(), self.config.budgets).runtime_s
        return await run_agent(
            command,
            self._meter,
            cwd=self.history.workdir,
            timeout=None if left is None else max(MIN_RUN_TIMEOUT_S, left),
            on_event=self._agent_event,
            interrupt=self.control.interrupt,
            force=self.control.force,
        )

    async def _after_run(self, result: IterationResult) -> Decision | None:
        """The ``claude`` process ended: the loop's end, or None to resume the session."""
        history = self.history
        interrupted = self.control.interrupt.is_set()
        fields = self._tracker_fields()
        if self._ended is None and not interrupted and fields is not None:
            self._catch_up_with(fields)
        active = fields is not None and fields.get("active") is True
        capped = (  # our last word was block, yet the session ended: not a completion
            active
            and self._stops > 0
            and self._ended is None
            and not (interrupted or result.timed_out or result.is_error)
            and fields is not None
            and fields.get("last_decision") == BLOCK
        )
        if history.open is not None and not capped and self._ended is None:
            self._cut_short(result, interrupted)
        history.settle(result)
        if self._ended is not None:
            return self._ended
        if interrupted:
            return INTERRUPTED
        if fields is None:
            return Decision(Action.STOP, StopReason.USER_STOP, "the loop's tracker was removed")
        if not active:
            return _ended_by_tracker(fields)
        decision = evaluate(self._totals(), self._budgets())
        if decision.action is not Action.CONTINUE:
            return decision
        if capped:
            self._warn(CAPPED)
            return None
        if await self._back_off():
            return INTERRUPTED
        following = self.loop.iteration + 1
        self._update_tracker({"iteration": following, "last_decision": None})
        history.begin(following)
        return None

    def _cut_short(self, result: IterationResult, interrupted: bool) -> None:
        """The running iteration ended without a Stop: interrupted, timed out or failed."""
        usage = self._meter.take()
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
        self.history.complete(status, result.final_text, usage, error=error, denials=self._take())

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

    # -- one Stop -----------------------------------------------------------------------------

    def _on_stop(self, request: StopRequest) -> Reply:
        """Decide one forwarded Stop (in the event loop; the recording runs after the reply)."""
        session, text = _stop_input(request.raw)
        if (session or request.session_id) != self.session.session_id:
            return NOT_OURS  # e.g. a nested claude: its own hook decides, as a standalone one
        if self.control.interrupt.is_set() or self._ended is not None:
            return ALLOW
        if self._last_stop == (request.raw, self._meter.messages):
            return ALLOW  # the same Stop from a second copy of the hook: the first one decides
        self._last_stop = (request.raw, self._meter.messages)
        self._stops += 1
        self._write_totals()
        line, record = respond(request.raw, request.argv, self._hook_env, time.time())
        if record is not None and record.stop_reason is None and self._stop_requested():
            line = self._stop_now(record)
        then = partial(self._record_safely, record, self._meter.take(), text or "")
        return Reply(decided=True, line=line, then=then)

    def _record_safely(self, record: StopRecord | None, usage: Usage, text: str) -> None:
        """Record after the reply; a store failure ends the session (and is raised once the
        agent has stopped)."""
        try:
            self._record_stop(record, usage, text)
        except Exception as exc:
            self._fatal = self._fatal or exc
            self.control.interrupt.set()

    def _record_stop(self, record: StopRecord | None, usage: Usage, text: str) -> None:
        history = self.history
        if record is not None:
            if record.iteration is None or record.iteration <= self.loop.iteration:
                return  # already recorded
            self._catch_up(record.iteration)
        if history.open is None:
            return
        history.complete(
            "ok",
            record.summary if record is not None else text,
            usage,
            completed=record is not None and record.completed,
            blocked_reason=record.blocked_reason if record is not None else None,
            denials=self._take(),
        )
        self._warn_unpriced()
        if record is None:
            return
        if record.stop_reason is not None:
            self._ended = Decision(Action.STOP, StopReason(record.stop_reason), record.stop_detail)
        else:
            history.begin(self.loop.iteration + 1)

    def _catch_up(self, n: int) -> None:
        """Make ``n`` the open iteration, recording the ones before it that the hook decided
        alone (it could not reach the runner)."""
        history = self.history
        if history.open is None:
            history.begin(self.loop.iteration + 1)
        while history.open is not None and history.open.n < n:
            history.complete("ok", DECIDED_ALONE)
            history.begin(self.loop.iteration + 1)

    def _catch_up_with(self, fields: dict[str, Scalar]) -> None:
        """After the session: the Stops the hook decided alone (the tracker is ahead)."""
        iteration = fields.get("iteration")
        if not isinstance(iteration, int) or iteration < self._running():
            return
        self._catch_up(iteration)
        if fields.get("active") is not True:  # ... the last of them ended the loop
            self.history.complete("ok", DECIDED_ALONE, self._meter.take(), denials=self._take())

    def _stop_requested(self) -> bool:
        """A ``.ralph/stop`` sentinel (``ralphctl loops stop``); a pause cannot be honoured."""
        signal = read_sentinel(self.history.workdir)
        if signal is ExternalSignal.PAUSE:
            self._warn("a hook-mode loop cannot pause: the request is ignored (stop it instead)")
        return signal is ExternalSignal.STOP

    def _stop_now(self, record: StopRecord) -> str:
        """Turn the block just decided into the loop's end (a stop request)."""
        n = record.iteration
        ended: dict[str, Scalar] = {"active": False, "last_decision": "allow", "iteration": n}
        ended |= {"ended_reason": str(StopReason.USER_STOP), "ended_at": iso(time.time())}
        self._update_tracker(ended)
        record.stop_reason, record.stop_detail = str(StopReason.USER_STOP), "stop requested"
        return json.dumps(
            {"systemMessage": f"Ralph loop stopped at iteration {n}: stop requested."}
        )

    # -- helpers ------------------------------------------------------------------------------

    def _write_totals(self) -> None:
        """The live totals into the tracker, where the decision reads its budgets."""
        usage = self._meter.current()
        loop = self.loop
        tokens = TokenUsage(
            loop.tokens_input, loop.tokens_output, loop.tokens_cache_read, loop.tokens_cache_write
        )
        counted = tokens_for_budget(
            tokens + usage.tokens, include_cache=self.config.count_cache_tokens
        )
        self._update_tracker({"cost_usd": loop.cost_usd + usage.cost_usd, "tokens": counted})

    def _update_tracker(self, changes: dict[str, Scalar]) -> None:
        try:
            update_fields(self.session.tracker, changes)
        except (OSError, TrackerError) as exc:
            self._warn(f"cannot update the tracker {self.session.tracker}: {exc}")

    def _tracker_fields(self) -> dict[str, Scalar] | None:
        try:
            tracker = load(self.session.tracker)
        except TrackerError as exc:
            self._warn(str(exc))
            return None
        return None if tracker is None else dict(tracker.fields)

    def _deactivate_tracker(self) -> None:
        """The loop is over: a tracker left active would block a later ``--resume``."""
        fields = self._tracker_fields()
        if fields is None or fields.get("active") is not True:
            return
        reason = self.loop.stop_reason or StopReason.INTERRUPTED
        self._update_tracker(
            {"active": False, "ended_reason": str(reason), "ended_at": iso(time.time())}
        )

    def _continue_message(self) -> str:
        """What a resumed session is told: the loop's continue message, as a block says it."""
        try:
            tracker = load(self.session.tracker)
            if tracker is not None:
                return loop_state(tracker, time.time()).reason
        except (TrackerError, CorruptTracker):
            pass
        return defaults.CONTINUE_MESSAGE

    def _running(self) -> int:
        return self.history.open.n if self.history.open else self.loop.iteration + 1

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
        loop = self.loop
        tokens = TokenUsage(
            loop.tokens_input, loop.tokens_output, loop.tokens_cache_read, loop.tokens_cache_write
        )
        return Totals(
            iterations=loop.iteration,
            runtime_s=self.history.runtime(),
            cost_usd=loop.cost_usd,
            tokens=tokens_for_budget(tokens, include_cache=self.config.count_cache_tokens),
            consecutive_errors=loop.consecutive_errors,
        )

    def _take(self) -> list[PermissionDenial]:
        denials, self._denials = self._denials, []
        return denials

    def _agent_event(self, event: AgentEvent) -> None:
        if isinstance(event, PermissionDenied):
            self._denials.append(PermissionDenial(event.tool_name, "", event.message))
        if self.observer is not None:
            open_ = self.history.open
            self.observer.on_agent_event(open_.n if open_ else self.loop.iteration, event)

    def _warn_unpriced(self) -> None:
        for model in sorted(self._meter.unpriced - self._unpriced):
            self._unpriced.add(model)
            self._warn(f"no price for model {model!r}: the live cost estimate leaves it out")

    def _warn(self, message: str) -> None:
        self.history.publish(EventType.WARNING, {"message": message})


def _stop_input(raw: bytes) -> tuple[str | None, str | None]:
    """The session id and final text of a Stop input (None, None if it is not one)."""
    try:
        event = parse(raw)
    except StopInputError:
        return None, None
    return event.session_id, event.final_text


def _ended_by_tracker(fields: dict[str, Scalar]) -> Decision:
    """The loop was ended outside the runner: cancelled, or decided by the hook alone."""
    reason = fields.get("ended_reason")
    try:
        return Decision(Action.STOP, StopReason(str(reason)), "ended by its tracker")
    except ValueError:
        detail = f"its tracker ended it: {reason} ({fields.get('problem') or 'no detail'})"
        return Decision(Action.STOP, StopReason.CIRCUIT_BREAKER, detail)
