"""The store side of a hook-mode loop: iterations begun and completed as the Stops come,
settled against each ``claude`` run's reported totals, the loop's start and end, events
(a ``budget_warning`` once per budget 80 % spent, as a fresh loop says it).

Writes are queued on the store's thread (``engine/storethread``), in order, as the Stops come:
the event loop, which answers the session's hook (and, under ``serve``, every other loop and
HTTP request), never waits on the database. Events are published once stored, in order. The
first failed write (StoreError, or a bug) fails every later one and is reported to
``on_failure``; ``begin_loop`` and ``end`` raise it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from ralphctl.domain.budget_warnings import budget_warnings
from ralphctl.domain.conditions import Action, Decision
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.costs import Cost
from ralphctl.domain.events import EventType
from ralphctl.domain.model import IterationResult, PermissionDenial, TokenUsage
from ralphctl.domain.states import LoopStatus, transition
from ralphctl.domain.steering import DELIVERED_KEY, Message
from ralphctl.domain.stoprules import Totals
from ralphctl.engine import storethread
from ralphctl.engine.hookmode.attribution import settle
from ralphctl.engine.hookmode.usage import Usage
from ralphctl.engine.record import iteration_events, loop_totals, summary
from ralphctl.engine.runner import LoopObserver
from ralphctl.engine.statefile import StateWriter
from ralphctl.engine.steering import pending_messages
from ralphctl.store.records import EventRecord, IterationRecord, LoopRecord, loop_summary

if TYPE_CHECKING:
    from ralphctl.store.repository import Store

P = ParamSpec("P")
T = TypeVar("T")

_END_EVENT = {
    LoopStatus.PAUSED: EventType.PAUSED,
    LoopStatus.COMPLETED: EventType.COMPLETED,
    LoopStatus.BLOCKED: EventType.BLOCKED,
    LoopStatus.STOPPED: EventType.STOPPED,
    LoopStatus.FAILED: EventType.FAILED,
}


class History:
    """Records one hook-mode loop. ``open`` is the iteration running now, if any;
    ``on_failure`` learns of the first store write that failed."""

    def __init__(
        self,
        store: Store,
        loop: LoopRecord,
        config: LoopConfig,
        *,
        observer: LoopObserver | None = None,
    ) -> None:
        self.store = store
        self.loop = loop
        self.config = config
        self.observer = observer
        self.open: IterationRecord | None = None
        self._agent_pid: int | None = None  # the session's claude process, while one runs
        self._agent_started_at: datetime | None = None
        self._run: list[IterationRecord] = []  # completed during the current claude run
        self._all: list[IterationRecord] = []
        self._settled_usd = loop.cost_usd  # the cost of the runs settled so far, as reported
        self._ran_before = loop.runtime_s  # before a pause
        self._started = time.monotonic()
        self._state = StateWriter(self.workdir, self._state_failed)
        self.on_failure: Callable[[Exception], None] | None = None
        self._failure: Exception | None = None  # set on the store's thread
        self._failure_told = False
        self._last_write: asyncio.Future[Any] | None = None
        self._warned: set[str] = set()  # the budgets a budget_warning was said of

    @property
    def workdir(self) -> Path:
        return Path(self.loop.workdir)

    def runtime(self) -> float:
        return self._ran_before + time.monotonic() - self._started

    def running(self) -> int:
        """The iteration running now (or the next one, between two)."""
        return self.open.n if self.open else self.loop.iteration + 1

    def tokens(self) -> TokenUsage:
        """The loop's tokens so far."""
        loop = self.loop
        return TokenUsage(
            loop.tokens_input, loop.tokens_output, loop.tokens_cache_read, loop.tokens_cache_write
        )

    def totals(self) -> Totals:
        """What the loop has used so far, as its budgets count it."""
        include_cache = self.config.count_cache_tokens
        return Totals(
            iterations=self.loop.iteration,
            runtime_s=self.runtime(),
            cost_usd=self.loop.cost_usd,
            tokens=self.tokens().counted(include_cache=include_cache),
            consecutive_errors=self.loop.consecutive_errors,
        )

    async def pending(self) -> list[Message]:
        """The user's messages no iteration has delivered yet (after every queued write)."""
        return await self._stored(pending_messages, self.store, self.loop.id)

    async def begin_loop(self, data: dict[str, Any]) -> None:
        """The loop starts, or (paused before) resumes; StoreError if that cannot be stored."""
        transition(self.loop.status, LoopStatus.RUNNING)
        resumed = self.loop.started_at is not None
        if resumed:  # what a runner before a pause warned of is not said again
            said = [str(EventType.BUDGET_WARNING)]
            warned = await self._stored(self.store.events_of, self.loop.id, said)
            self._warned = {str(event.data.get("budget")) for event in warned}
        self.loop = await self._stored(
            self.store.save_loop,
            replace(
                self.loop,
                status=LoopStatus.RUNNING,
                stop_reason=None,
                stop_detail=None,
                started_at=self.loop.started_at or _now(),
                runner_pid=os.getpid(),
                runner_host=socket.gethostname(),
            ),
        )
        data = {"iteration": self.loop.iteration, "config": self.config.to_json(), **data}
        self.publish(EventType.RESUMED if resumed else EventType.STARTED, data)
        await self.written()
        if self._failure is not None:
            raise self._failure
        self.write_state()

    def agent_started(self, pid: int, at: float) -> None:
        """A ``claude`` process of the session started (``at``: epoch seconds); the iterations
        it runs record it, the open one too."""
        self._agent_pid, self._agent_started_at = pid, datetime.fromtimestamp(at, UTC)
        if self.open is not None:
            started = self._agent_started_at
            self._write(self.store.set_iteration_agent, self.loop.id, self.open.n, pid, started)
            self.open = replace(self.open, agent_pid=pid, agent_started_at=self._agent_started_at)

    def agent_ended(self) -> None:
        self._agent_pid = self._agent_started_at = None

    def begin(self, n: int, messages: list[int] | None = None) -> None:
        """Iteration ``n`` starts now; ``messages``: the seqs of the user's messages its
        continue message delivered."""
        started = IterationRecord(
            loop_id=self.loop.id,
            n=n,
            started_at=_now(),
            agent_pid=self._agent_pid,
            agent_started_at=self._agent_started_at,
        )
        self._write(self.store.begin_iteration, started)
        self.open = started
        data: dict[str, Any] = {"iteration": n}
        if messages:
            data[DELIVERED_KEY] = list(messages)
        self.publish(EventType.ITERATION_STARTED, data)

    def complete(
        self,
        status: str,
        text: str = "",
        usage: Usage | None = None,
        *,
        completed: bool = False,
        blocked_reason: str | None = None,
        error: str | None = None,
        denials: Sequence[PermissionDenial] = (),
    ) -> None:
        """The open iteration ended: ``status`` ok, error, timeout or interrupted."""
        assert self.open is not None, "no iteration is running"
        spent = usage or Usage()
        result = IterationResult(
            final_text=text,
            is_error=status != "ok",
            error_message=error,
            tokens=spent.tokens,
            cost_usd=spent.cost_usd,
            permission_denials=tuple(denials),
        )
        ended = _now()
        done = replace(
            self.open,
            status=status,
            completed_at=ended,
            duration_ms=round((ended - self.open.started_at).total_seconds() * 1000),
            tokens_input=spent.tokens.input,
            tokens_output=spent.tokens.output,
            tokens_cache_read=spent.tokens.cache_read,
            tokens_cache_write=spent.tokens.cache_write,
            cost_usd=spent.cost_usd,
            cost_source="estimated",
            completion_signal_found=completed,
            blocked_reason=blocked_reason,
            error_message=error,
            output_summary=summary(result),
            agent_session_id=self.loop.agent_session_id,
            permission_denials=[
                {"tool_name": d.tool_name, "tool_use_id": d.tool_use_id, "detail": d.detail}
                for d in denials
            ],
        )
        self.loop = loop_totals(self.loop, done, runtime_s=self.runtime(), breaker=None)
        events = iteration_events(done, result, self.loop, self.config.permission_mode)
        events += self._budget_events(done.n)
        self._write(self.store.complete_iteration, done, self.loop, events, publish=True)
        self.open = None
        self._run.append(done)
        self._all.append(done)
        self.write_state()

    def settle(self, totals: tuple[TokenUsage, Cost] | None) -> None:
        """A ``claude`` run ended: its reported ``totals`` replace the estimates of its
        iterations (None: it reported none, the estimates stay)."""
        ran, self._run = self._run, []
        if totals is None or totals[1].usd is None or not ran:
            self._settled_usd += sum(it.cost_usd or 0.0 for it in ran)
            return
        tokens, cost = totals
        assert cost.usd is not None
        settled = settle(ran, tokens, cost)
        self._settled_usd += cost.usd
        loop = replace(self.loop, cost_usd=self._settled_usd)
        for before, after in zip(ran, settled, strict=True):
            loop = replace(
                loop,
                tokens_input=loop.tokens_input - before.tokens_input + after.tokens_input,
                tokens_output=loop.tokens_output - before.tokens_output + after.tokens_output,
                tokens_cache_read=(
                    loop.tokens_cache_read - before.tokens_cache_read + after.tokens_cache_read
                ),
                tokens_cache_write=(
                    loop.tokens_cache_write - before.tokens_cache_write + after.tokens_cache_write
                ),
            )
        correction = loop.cost_usd - self.loop.cost_usd
        self.loop = loop
        for after in settled[:-1]:
            self._write(self.store.complete_iteration, after, loop)
        event = {
            "iteration": settled[-1].n,
            "cost_usd": correction,
            "source": str(cost.source),
            "total_usd": loop.cost_usd,
            "settled_iterations": [it.n for it in settled],
        }
        cost_event = [(str(EventType.COST_INCURRED), event), *self._budget_events(settled[-1].n)]
        self._write(self.store.complete_iteration, settled[-1], loop, cost_event, publish=True)
        numbers = {it.n: it for it in settled}
        self._all = [numbers.get(it.n, it) for it in self._all]
        self.write_state()

    async def end(self, decision: Decision) -> LoopRecord:
        """The loop's final status (paused, or from the ``StopReason`` of ``decision``); the
        state file is written before it is stored, so nothing is left to write after."""
        reason = decision.reason
        paused = decision.action is Action.PAUSE
        assert paused or reason is not None, "a hook-mode loop always ends with a reason"
        status = LoopStatus.PAUSED if reason is None else reason.status
        transition(self.loop.status, status)
        self.loop = replace(
            self.loop,
            status=status,
            stop_reason=reason,
            stop_detail=decision.detail,
            ended_at=None if paused else _now(),
            runtime_s=self.runtime(),
            runner_pid=None,
        )
        self.write_state()
        await self.flush()
        why = reason and str(reason)
        events = [
            (
                str(EventType.STATE_CHANGED),
                {"status": str(status), "reason": why, "detail": decision.detail},
            ),
            (str(_END_EVENT[status]), {"reason": why, **loop_summary(self.loop)}),
        ]
        self.loop, stored = await self._stored(self.store.save_loop_with_events, self.loop, events)
        self.deliver(stored)
        if self._failure is not None:
            raise self._failure
        return self.loop

    def _budget_events(self, n: int) -> list[tuple[str, dict[str, Any]]]:
        """A ``budget_warning`` for each budget 80 % spent, once per budget and loop."""
        found = budget_warnings(self.totals(), self.config.budgets, self._warned)
        self._warned.update(warning["budget"] for warning in found)
        return [(str(EventType.BUDGET_WARNING), {"iteration": n, **data}) for data in found]

    def save_loop(self, loop: LoopRecord) -> None:
        """The loop changed (parked, running again): queue its write."""
        self.loop = loop
        self._write(self.store.save_loop, loop)

    def error(self, kind: str, message: str, context: dict[str, Any]) -> None:
        n = self.open.n if self.open else self.loop.iteration
        self._write(self.store.add_error, self.loop.id, n, kind, message, context)
        self.publish(EventType.ERROR, {"iteration": n, "message": message})

    def warn(self, message: str) -> None:
        self.publish(EventType.WARNING, {"message": message})

    def publish(self, event_type: EventType, data: dict[str, Any]) -> None:
        self._write(self.store.append_event, self.loop.id, str(event_type), data, publish=True)

    def deliver(self, stored: list[EventRecord]) -> None:
        if self.observer is not None:
            for record in stored:
                self.observer.on_event(record)

    def write_state(self) -> None:
        self._state.submit(self.loop, self._all)

    async def flush(self) -> None:
        """Wait until ``.ralph/state.json`` shows the last state written, and the store every
        write queued."""
        await self._state.flush()
        await self.written()

    async def written(self) -> None:
        """Wait until every queued store write is done (failed or not)."""
        if self._last_write is not None:
            await asyncio.wait([self._last_write])

    def _write(self, call: Callable[..., Any], *args: Any, publish: bool = False) -> None:
        """Queue a store write; with ``publish``, what it returns (events) is published, from
        the store's thread (``engine/storethread``)."""
        if publish:
            future = storethread.submit_delivering(
                self.store, self._deliver_stored, self._guarded, call, *args
            )
        else:
            future = storethread.submit(self.store, self._guarded, call, *args)
        future.add_done_callback(self._written)
        self._last_write = future

    async def _stored(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """A store call's result, after every write queued before it."""
        return await storethread.run(self.store, self._guarded, partial(call, *args, **kwargs))

    def _guarded(self, call: Callable[..., T], *args: Any) -> T:
        """On the store's thread: ``call``, unless an earlier write failed."""
        if self._failure is not None:
            raise self._failure
        try:
            return call(*args)
        except Exception as exc:
            self._failure = exc
            raise

    def _deliver_stored(self, stored: EventRecord | list[EventRecord]) -> None:
        self.deliver(stored if isinstance(stored, list) else [stored])

    def _written(self, future: asyncio.Future[Any]) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if isinstance(exc, Exception) and not self._failure_told:
            self._failure_told = True
            if self.on_failure is not None:
                self.on_failure(exc)

    def _state_failed(self, exc: OSError) -> None:
        self.warn(f"cannot write .ralph/state.json: {exc.strerror or exc}")


def _now() -> datetime:
    return datetime.now(UTC)
