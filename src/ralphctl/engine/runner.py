"""The fresh-context loop: prompt, run the agent, record, ask the brain, cool down, repeat.

Everything needed to continue is committed to the store before the next iteration starts, so
a crash at any moment loses at most the running iteration (marked interrupted on resume).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ralphctl.agents.base import AgentAdapter, AgentRequest, AgentUnavailable
from ralphctl.agents.events import AgentEvent
from ralphctl.agents.process import run_agent
from ralphctl.domain.conditions import (
    Action,
    Decision,
    ExternalSignal,
    Totals,
    evaluate,
    remaining,
)
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.events import EventType
from ralphctl.domain.markers import Detection, detect
from ralphctl.domain.model import IterationResult
from ralphctl.domain.states import LoopStatus, StopReason, transition
from ralphctl.engine.checkpoint import create_checkpoint, is_git_work_tree
from ralphctl.engine.prompt import PastIteration, PromptContext, build_prompt
from ralphctl.engine.sentinels import read_sentinel
from ralphctl.engine.statefile import check_state_file, render_state, write_state
from ralphctl.store.records import EventRecord, IterationRecord, LoopRecord

if TYPE_CHECKING:
    from ralphctl.store.repository import Store

SUMMARY_CHARS = 200
MIN_ITERATION_TIMEOUT_S = 1.0


class LoopObserver(Protocol):
    """Receives what a running loop does, for a terminal UI or a server."""

    def on_event(self, event: EventRecord) -> None: ...

    def on_agent_event(self, iteration: int, event: AgentEvent) -> None: ...


@dataclass
class RunControl:
    """Set ``interrupt`` to stop after killing the running agent; ``force`` to kill at once."""

    interrupt: asyncio.Event = field(default_factory=asyncio.Event)
    force: asyncio.Event = field(default_factory=asyncio.Event)


class LoopRunner:
    """Runs one loop to its end (or until interrupted), persisting as it goes."""

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
        self._runtime_base = loop.runtime_s
        self._segment_start = time.monotonic()

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
        if self._open_store is None:
            await self._begin()
        while True:
            decision = evaluate(self._totals(), self.config.budgets)
            if decision.action is not Action.CONTINUE:
                return await self._end(decision)
            try:
                result, detection = await self._iteration(self.loop.iteration + 1)
            except AgentUnavailable as exc:
                return await self._end(
                    Decision(Action.STOP, StopReason.AGENT_UNAVAILABLE, str(exc))
                )
            if result.interrupted or self.control.interrupt.is_set():
                return await self._end(Decision(Action.STOP, StopReason.INTERRUPTED, "interrupted"))
            decision = evaluate(
                self._totals(),
                self.config.budgets,
                completed=detection.completed,
                blocked_reason=detection.blocked_reason,
                external=self.external(),
            )
            if decision.action is not Action.CONTINUE:
                return await self._end(decision)
            if await self._cooldown():
                return await self._end(Decision(Action.STOP, StopReason.INTERRUPTED, "interrupted"))

    # -- one iteration -------------------------------------------------------------------

    async def _iteration(self, n: int) -> tuple[IterationResult, Detection]:
        prompt = self._prompt(n)
        started = IterationRecord(loop_id=self.loop.id, n=n, started_at=_now())
        if self._open_store is None:
            self._begin_iteration(started)
        agent = asyncio.create_task(self._run_agent(n, prompt))
        if self._open_store is not None:
            await self._store_new_loop(started, agent)
        try:
            result = await agent
        except AgentUnavailable as exc:
            self._record(started, IterationResult(is_error=True, error_message=str(exc)), None)
            raise
        detection = (
            detect(result.final_text, self.config.marker, prompt=prompt)
            if not result.is_error
            else Detection(completed=False, blocked_reason=None, evidence=None)
        )
        self._record(started, result, detection)
        interval = self.config.checkpoint_interval
        if self._checkpoints and n % interval == 0 and not result.interrupted:
            await self._checkpoint(n)
        return result, detection

    def _begin_iteration(self, started: IterationRecord) -> None:
        self.store.begin_iteration(started)
        self._publish(EventType.ITERATION_STARTED, {"iteration": started.n})

    async def _store_new_loop(
        self, started: IterationRecord, agent: asyncio.Task[IterationResult]
    ) -> None:
        """Open the store in a worker thread while the first agent runs; record the start."""
        assert self._open_store is not None
        try:
            self._store = await asyncio.to_thread(self._open_store)
            self.loop = self.store.create_loop(self.loop)
            self._open_store = None
            await self._begin()
            self._begin_iteration(started)
        except BaseException:
            self.control.force.set()  # nothing can be recorded: do not leave the agent running
            with contextlib.suppress(BaseException):
                await agent
            raise

    async def _run_agent(self, n: int, prompt: str) -> IterationResult:
        request = AgentRequest(
            prompt=prompt,
            workdir=self.workdir,
            iteration=n,
            session_id=str(uuid.uuid4()),
            extra_args=tuple(self.config.agent_args),
            permission_mode=self.config.permission_mode,
            remaining_cost_usd=remaining(self._totals(), self.config.budgets).cost_usd,
        )
        command = self.adapter.build_command(request)
        command = replace(
            command,
            env={**command.env, "RALPHCTL_ITERATION": str(n), "RALPHCTL_LOOP_ID": self.loop.id},
        )
        return await run_agent(
            command,
            self.adapter.new_parser(),
            cwd=self.workdir,
            timeout=self._iteration_timeout(),
            on_event=lambda event: self._agent_event(n, event),
            interrupt=self.control.interrupt,
            force=self.control.force,
        )

    async def _checkpoint(self, n: int) -> None:
        outcome = await create_checkpoint(self.workdir, n)
        if outcome.sha:
            self.store.add_checkpoint(self.loop.id, n, outcome.sha, self._summary())
            self._publish(EventType.CHECKPOINT_CREATED, {"iteration": n, "commit_sha": outcome.sha})
        elif outcome.error:
            self.store.add_error(self.loop.id, n, "checkpoint", outcome.error, {})
            self._publish(EventType.ERROR, {"iteration": n, "message": outcome.error})

    def _record(
        self, started: IterationRecord, result: IterationResult, detection: Detection | None
    ) -> None:
        status = _iteration_status(result)
        done = replace(
            started,
            status=status,
            completed_at=_now(),
            duration_ms=result.duration_ms,
            tokens_input=result.tokens.input,
            tokens_output=result.tokens.output,
            tokens_cache_read=result.tokens.cache_read,
            tokens_cache_write=result.tokens.cache_write,
            cost_usd=result.cost_usd,
            cost_source=None if result.cost_usd is None else "reported",
            exit_code=result.exit_code,
            completion_signal_found=bool(detection and detection.completed),
            blocked_reason=detection.blocked_reason if detection else None,
            error_message=result.error_message if result.is_error else None,
            output_summary=_summary(result),
            agent_session_id=result.session_id,
            num_turns=result.num_turns,
            permission_denials=[
                {"tool_name": d.tool_name, "tool_use_id": d.tool_use_id, "detail": d.detail}
                for d in result.permission_denials
            ],
        )
        self.loop = replace(
            self.loop,
            iteration=started.n,
            cost_usd=self.loop.cost_usd + (result.cost_usd or 0.0),
            tokens_input=self.loop.tokens_input + result.tokens.input,
            tokens_output=self.loop.tokens_output + result.tokens.output,
            tokens_cache_read=self.loop.tokens_cache_read + result.tokens.cache_read,
            tokens_cache_write=self.loop.tokens_cache_write + result.tokens.cache_write,
            consecutive_errors=_consecutive_errors(self.loop.consecutive_errors, status),
            runtime_s=self._runtime(),
            agent_session_id=result.session_id or self.loop.agent_session_id,
        )
        if status in ("error", "timeout"):
            self.store.add_error(
                self.loop.id, done.n, _error_type(result), _error_text(done), _error_context(result)
            )
        stored = self.store.complete_iteration(
            done, self.loop, self._iteration_events(done, result)
        )
        self._history.append(done)
        self._deliver(stored)
        self._write_state()

    def _iteration_events(
        self, done: IterationRecord, result: IterationResult
    ) -> list[tuple[str, dict[str, Any]]]:
        """The events of a finished iteration, stored in the same transaction as the iteration."""
        n = done.n
        batch: list[tuple[str, dict[str, Any]]] = [
            (
                EventType.ITERATION_COMPLETED,
                {
                    "iteration": n,
                    "status": done.status,
                    "duration_ms": done.duration_ms,
                    "cost_usd": done.cost_usd,
                    "tokens": result.tokens.total,
                    "completion_signal_found": done.completion_signal_found,
                    "blocked_reason": done.blocked_reason,
                    "error": done.error_message,
                    "permission_denials": len(done.permission_denials),
                },
            )
        ]
        if result.tokens.total:
            tokens = result.tokens
            batch.append(
                (
                    EventType.TOKENS_USED,
                    {
                        "iteration": n,
                        "input": tokens.input,
                        "output": tokens.output,
                        "cache_read": tokens.cache_read,
                        "cache_write": tokens.cache_write,
                        "total": self.loop.tokens_input + self.loop.tokens_output,
                    },
                )
            )
        if result.cost_usd:
            batch.append(
                (
                    EventType.COST_INCURRED,
                    {"iteration": n, "cost_usd": result.cost_usd, "total_usd": self.loop.cost_usd},
                )
            )
        if done.completion_signal_found:
            batch.append((EventType.COMPLETION_SIGNAL_DETECTED, {"iteration": n}))
        if done.status in ("error", "timeout"):
            batch.append((EventType.ERROR, {"iteration": n, "message": _error_text(done)}))
        if result.permission_denials:
            tools = ", ".join(sorted({d.tool_name for d in result.permission_denials}))
            message = (
                f"permission denied for {tools}: the agent could not use them in permission "
                f"mode {self.config.permission_mode!r}"
            )
            batch.append((EventType.WARNING, {"iteration": n, "message": message}))
        return [(str(kind), data) for kind, data in batch]

    # -- loop lifecycle ------------------------------------------------------------------

    async def _begin(self) -> None:
        leftovers = self.store.interrupt_running_iterations(self.loop.id)
        resumed = self.loop.started_at is not None
        if self.loop.status is not LoopStatus.RUNNING:
            transition(self.loop.status, LoopStatus.RUNNING)
        self.loop = replace(
            self.loop,
            status=LoopStatus.RUNNING,
            stop_reason=None,
            stop_detail=None,
            ended_at=None,
            iteration=max([self.loop.iteration, *leftovers]),
            started_at=self.loop.started_at or _now(),
            runner_pid=os.getpid(),
            runner_host=socket.gethostname(),
        )
        self.loop = self.store.save_loop(self.loop)
        self._history = self.store.iterations(self.loop.id)
        data: dict[str, Any] = {"iteration": self.loop.iteration, "config": self.config.to_json()}
        if leftovers:
            data["interrupted_iterations"] = leftovers
        self._publish(EventType.RESUMED if resumed else EventType.STARTED, data)
        problem = check_state_file(self.workdir)
        if problem:
            self._publish(EventType.WARNING, {"message": problem})
        self._write_state()
        if self.config.checkpoint_interval and not await is_git_work_tree(self.workdir):
            self._checkpoints = False
            self._publish(
                EventType.WARNING,
                {"message": f"{self.workdir} is not a git work tree: checkpoints are off"},
            )

    async def _end(self, decision: Decision) -> LoopRecord:
        if decision.action is Action.PAUSE:
            status, reason = LoopStatus.PAUSED, None
        else:
            assert decision.reason is not None
            status, reason = decision.reason.status, decision.reason
        transition(self.loop.status, status)
        if self._checkpoints and self.loop.iteration:
            await self._checkpoint(self.loop.iteration)
        self.loop = self.store.save_loop(
            replace(
                self.loop,
                status=status,
                stop_reason=reason,
                stop_detail=decision.detail,
                ended_at=None if status is LoopStatus.PAUSED else _now(),
                runtime_s=self._runtime(),
                runner_pid=None,
            )
        )
        self._publish(
            EventType.STATE_CHANGED,
            {"status": str(status), "reason": reason and str(reason), "detail": decision.detail},
        )
        self._publish(_END_EVENT[status], {"reason": reason and str(reason), **self._summary()})
        self._write_state()
        return self.loop

    async def _cooldown(self) -> bool:
        """Wait out the cooldown; True if interrupted meanwhile."""
        if self.config.cooldown <= 0:
            return self.control.interrupt.is_set()
        try:
            await asyncio.wait_for(self.control.interrupt.wait(), self.config.cooldown)
        except TimeoutError:
            return False
        return True

    # -- helpers -------------------------------------------------------------------------

    def _prompt(self, n: int) -> str:
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
                    for it in self._history
                ],
                last_error=last.error_message if last and last.status != "ok" else None,
            )
        )

    def _totals(self) -> Totals:
        return Totals(
            iterations=self.loop.iteration,
            runtime_s=self._runtime(),
            cost_usd=self.loop.cost_usd,
            tokens=self.loop.tokens_input + self.loop.tokens_output,
            consecutive_errors=self.loop.consecutive_errors,
        )

    def _runtime(self) -> float:
        return self._runtime_base + (time.monotonic() - self._segment_start)

    def _iteration_timeout(self) -> float:
        left = remaining(self._totals(), self.config.budgets).runtime_s
        timeout = self.config.iteration_timeout
        return max(MIN_ITERATION_TIMEOUT_S, timeout if left is None else min(timeout, left))

    def _summary(self) -> dict[str, Any]:
        return {
            "iteration": self.loop.iteration,
            "cost_usd": self.loop.cost_usd,
            "tokens": self.loop.tokens_input + self.loop.tokens_output,
            "runtime_s": round(self.loop.runtime_s, 3),
        }

    def _publish(self, event_type: EventType, data: dict[str, Any]) -> None:
        self._deliver([self.store.append_event(self.loop.id, str(event_type), data)])

    def _deliver(self, stored: list[EventRecord]) -> None:
        if self.observer:
            for record in stored:
                self.observer.on_event(record)

    def _agent_event(self, n: int, event: AgentEvent) -> None:
        if self.observer:
            self.observer.on_agent_event(n, event)

    def _write_state(self) -> None:
        try:
            write_state(self.workdir, render_state(self.loop, self._history))
        except OSError as exc:
            self._publish(
                EventType.WARNING,
                {"message": f"cannot write .ralph/state.json: {exc.strerror or exc}"},
            )


_END_EVENT = {
    LoopStatus.COMPLETED: EventType.COMPLETED,
    LoopStatus.BLOCKED: EventType.BLOCKED,
    LoopStatus.STOPPED: EventType.STOPPED,
    LoopStatus.FAILED: EventType.FAILED,
    LoopStatus.PAUSED: EventType.PAUSED,
}


def _iteration_status(result: IterationResult) -> str:
    if result.interrupted:
        return "interrupted"
    if result.timed_out:
        return "timeout"
    return "error" if result.is_error else "ok"


def _error_type(result: IterationResult) -> str:
    if result.timed_out:
        return "timeout"
    if result.api_error_status:
        return f"api_error_{result.api_error_status}"
    if result.exit_code not in (0, None):
        return "agent_exit"
    return "agent_error"


def _consecutive_errors(before: int, status: str) -> int:
    """Errors and timeouts count; an interrupt (the user's doing) leaves the count as it was."""
    if status in ("error", "timeout"):
        return before + 1
    return before if status == "interrupted" else 0


def _error_text(done: IterationRecord) -> str:
    return done.error_message or "the agent run failed"


def _error_context(result: IterationResult) -> dict[str, Any]:
    return {
        "exit_code": result.exit_code,
        "api_error_status": result.api_error_status,
        "stderr_tail": result.stderr_tail[-4000:],
        "output_tail": result.final_text[-2000:],
        "unparsed_lines": result.unparsed_lines,
        "timed_out": result.timed_out,
    }


def _summary(result: IterationResult) -> str:
    text = " ".join(result.final_text.split()) or (result.error_message or "")
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _now() -> datetime:
    return datetime.now(UTC)
