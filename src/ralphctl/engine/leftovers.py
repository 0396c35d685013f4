"""Iterations a runner that died left running: stop their agents, then mark them interrupted,
with what their agents spent when their transcripts show it (``engine/usage_recovery``).

Before that, iterations the database refused and the runner kept in the loop's journal
(``engine/unrecorded``) are recorded, exactly once: a finished one with what its agent
reported, one only begun as running (then interrupted like the others).

Whoever takes over or settles a loop that no runner runs calls this: start-up reconciliation,
a runner's start (``ralphctl resume`` of a crashed loop), pause or stop of such a loop. Agents
are stopped before their iterations are marked, so that a crash in between leaves them to be
found again. Which processes are the agent's is decided by ``engine/orphans`` (psutil), which
is imported only when there is an agent to look for.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ralphctl.domain.events import EventType
from ralphctl.domain.money import format_usd
from ralphctl.engine.unrecorded import JournalUnreadable, forget, read_journal, set_aside
from ralphctl.store.errors import StoreError
from ralphctl.store.records import IterationRecord, LoopRecord, RecoveredUsage

if TYPE_CHECKING:
    from ralphctl.store.repository import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AgentFate:
    """What became of the agent of an iteration left running."""

    iteration: int
    pid: int
    outcome: str  # engine.orphans.Outcome
    detail: str
    said: str  # "was still running: stopped with SIGTERM"

    def sentence(self) -> str:
        return f"the agent of iteration {self.iteration} (pid {self.pid}) {self.said}"

    def data(self) -> dict[str, Any]:
        """As event data."""
        return {
            "iteration": self.iteration,
            "pid": self.pid,
            "outcome": self.outcome,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class Leftovers:
    """One loop's iterations marked interrupted, what became of their agents, and what those
    agents spent (recorded on the iterations and added to the loop's totals)."""

    interrupted: list[int] = field(default_factory=list)
    agents: list[AgentFate] = field(default_factory=list)
    recovered: dict[int, RecoveredUsage] = field(default_factory=dict)
    replayed: list[IterationRecord] = field(default_factory=list)
    journal_problem: str | None = None
    #: The loop's streaks, breaker and runtime after a replayed iteration that was its newest.
    loop_state: dict[str, Any] | None = None

    @property
    def changed(self) -> bool:
        """Whether anything was found (and is worth a warning)."""
        found = self.interrupted or self.agents or self.recovered or self.replayed
        return bool(found or self.journal_problem)

    def message(self) -> str:
        """What was done, for a warning; empty when nothing was."""
        parts = []
        if self.journal_problem:
            parts.append(self.journal_problem)
        parts.extend(
            f"iteration {it.n} ({it.status}, {format_usd(it.cost_usd or 0.0)}), which the "
            "database had refused, was recorded from the loop's journal"
            for it in self.replayed
            if it.status != "running"
        )
        if self.interrupted:
            numbers = ", ".join(map(str, self.interrupted))
            parts.append(f"iteration {numbers} was left running by a runner that died: interrupted")
        parts.extend(agent.sentence() for agent in self.agents)
        parts.extend(
            f"the usage of iteration {n} was recovered from its transcript"
            + ("" if usage.cost_usd is None else f" ({format_usd(usage.cost_usd)})")
            for n, usage in sorted(self.recovered.items())
        )
        return "; ".join(parts)

    def applied_to(self, loop: LoopRecord) -> LoopRecord:
        """``loop`` as read before, brought to what the store now holds: the interrupted
        iterations counted, what they spent added to its totals."""
        finished = [it for it in self.replayed if it.status != "running"]
        spent: list[RecoveredUsage | IterationRecord] = [*self.recovered.values(), *finished]
        return replace(
            loop,
            **(self.loop_state or {}),
            iteration=max([loop.iteration, *self.interrupted, *(it.n for it in finished)]),
            cost_usd=loop.cost_usd + sum(usage.cost_usd or 0.0 for usage in spent),
            tokens_input=loop.tokens_input + sum(usage.tokens_input for usage in spent),
            tokens_output=loop.tokens_output + sum(usage.tokens_output for usage in spent),
            tokens_cache_read=loop.tokens_cache_read
            + sum(usage.tokens_cache_read for usage in spent),
            tokens_cache_write=loop.tokens_cache_write
            + sum(usage.tokens_cache_write for usage in spent),
        )


def interrupt_leftovers(store: Store, loops: Sequence[LoopRecord]) -> dict[str, Leftovers]:
    """For each loop (none of which a runner runs): stop the agents of its running iterations,
    all at once, then mark those iterations interrupted. Iterations kept in their journals
    are recorded first. Keyed by loop id."""
    journals = {loop.id: replay_journal(store, loop) for loop in loops}
    running = {loop.id: store.running_iterations(loop.id) for loop in loops}
    hosts = {loop.id: loop.runner_host for loop in loops}
    fates = _stop([it for its in running.values() for it in its], hosts)
    found = {}
    for loop in loops:
        agents = [fates[(loop.id, it.n)] for it in running[loop.id] if (loop.id, it.n) in fates]
        notes = {agent.iteration: f"its agent (pid {agent.pid}) {agent.said}" for agent in agents}
        spent = _recover(store, loop, running[loop.id])
        interrupted = (
            store.interrupt_running_iterations(loop.id, notes, spent) if running[loop.id] else []
        )
        recovered = {n: usage for n, usage in spent.items() if n in interrupted}
        replay = journals[loop.id]
        found[loop.id] = Leftovers(
            interrupted, agents, recovered, replay.recorded, replay.problem, replay.loop_state
        )
    return found


@dataclass(frozen=True, slots=True)
class Replay:
    """What a journal's replay recorded: its iterations, the loop's state after the newest of
    them when that one is newer than the loop, or what was wrong with an unreadable journal."""

    recorded: list[IterationRecord] = field(default_factory=list)
    loop_state: dict[str, Any] | None = None
    problem: str | None = None


def replay_journal(store: Store, loop: LoopRecord) -> Replay:
    """Record what the loop's journal keeps (each iteration once, with the checkpoint made
    after it), then remove it. An unreadable journal is set aside unreplayed, so that nothing
    is counted twice."""
    workdir = Path(loop.workdir)
    try:
        kept = read_journal(workdir, loop.id)
    except JournalUnreadable as exc:
        aside = set_aside(workdir, loop.id)
        problem = f"{exc}: set aside as {aside.name}, nothing in it was recorded"
        log.warning("loop %s: %s", loop.id, problem)
        return Replay(problem=problem)
    recorded = [
        entry
        for entry in kept
        if store.record_unrecorded(
            entry.record, entry.events, entry.loop_state, _checkpoint_of(entry.events)
        )
        is not None
    ]
    if kept:
        forget(workdir, loop.id)
    newest = max(recorded, key=lambda entry: entry.record.n, default=None)
    state = None
    if newest is not None and newest.finished and newest.record.n > loop.iteration:
        state = newest.loop_state
    return Replay([entry.record for entry in recorded], state)


def _checkpoint_of(events: Sequence[tuple[str, dict[str, Any]]]) -> str | None:
    """The sha of the checkpoint an iteration's kept events say was made after it."""
    for kind, data in events:
        if kind == EventType.CHECKPOINT_CREATED and isinstance(data.get("commit_sha"), str):
            return str(data["commit_sha"])
    return None


def _recover(
    store: Store, loop: LoopRecord, running: Sequence[IterationRecord]
) -> dict[int, RecoveredUsage]:
    """What the agents of those iterations spent, as their transcripts show (after the agents
    were stopped: nothing more is written). A transcript that cannot be read is skipped."""
    if not running:
        return {}
    # Imported here: reading transcripts needs the store's SQLAlchemy modules, which a new
    # loop's runner imports only once its first agent runs (start-up budget).
    from ralphctl.engine.usage_recovery import recover_usage

    recovered = {}
    for iteration in running:
        try:
            usage = recover_usage(store, loop, iteration)
        except (StoreError, ValueError, zlib.error) as exc:
            n = iteration.n
            log.warning("loop %s: cannot read the transcript of iteration %d: %s", loop.id, n, exc)
            continue
        if usage is not None:
            recovered[iteration.n] = usage
    return recovered


def _stop(
    iterations: list[IterationRecord], hosts: dict[str, str | None]
) -> dict[tuple[str, int], AgentFate]:
    """Stop the agents of those iterations that recorded one, by (loop id, iteration)."""
    recorded = [(it, agent) for it in iterations if (agent := _agent_of(it)) is not None]
    if not recorded:
        return {}
    from ralphctl.engine.orphans import Agent, Outcome, stop_orphans

    agents = [Agent(pid, at, it.loop_id, hosts[it.loop_id]) for it, (pid, at) in recorded]
    fates = {}
    for (it, _), done in zip(recorded, stop_orphans(agents), strict=True):
        fate = AgentFate(it.n, done.agent.pid, str(done.outcome), done.detail, done.said())
        level = logging.INFO if done.outcome is Outcome.GONE else logging.WARNING
        log.log(level, "loop %s: %s", it.loop_id, fate.sentence())
        fates[(it.loop_id, it.n)] = fate
    return fates


def _agent_of(iteration: IterationRecord) -> tuple[int, float] | None:
    """The iteration's agent as recorded: pid, start (epoch seconds); None if none was."""
    if iteration.agent_pid is None or iteration.agent_started_at is None:
        return None
    return iteration.agent_pid, iteration.agent_started_at.timestamp()
