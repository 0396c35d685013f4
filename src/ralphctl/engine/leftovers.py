"""Iterations a runner that died left running: stop their agents, then mark them interrupted.

Whoever takes over or settles a loop that no runner runs calls this: start-up reconciliation,
a runner's start (``ralphctl resume`` of a crashed loop), pause or stop of such a loop. Agents
are stopped before their iterations are marked, so that a crash in between leaves them to be
found again. Which processes are the agent's is decided by ``engine/orphans`` (psutil), which
is imported only when there is an agent to look for.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ralphctl.store.records import IterationRecord, LoopRecord

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
    """One loop's iterations marked interrupted, and what became of their agents."""

    interrupted: list[int] = field(default_factory=list)
    agents: list[AgentFate] = field(default_factory=list)

    def message(self) -> str:
        """What was done, for a warning; empty when nothing was."""
        parts = []
        if self.interrupted:
            numbers = ", ".join(map(str, self.interrupted))
            parts.append(f"iteration {numbers} was left running by a runner that died: interrupted")
        parts.extend(agent.sentence() for agent in self.agents)
        return "; ".join(parts)


def interrupt_leftovers(store: Store, loops: Sequence[LoopRecord]) -> dict[str, Leftovers]:
    """For each loop (none of which a runner runs): stop the agents of its running iterations,
    all at once, then mark those iterations interrupted. Keyed by loop id."""
    running = {loop.id: store.running_iterations(loop.id) for loop in loops}
    hosts = {loop.id: loop.runner_host for loop in loops}
    fates = _stop([it for its in running.values() for it in its], hosts)
    found = {}
    for loop in loops:
        agents = [fates[(loop.id, it.n)] for it in running[loop.id] if (loop.id, it.n) in fates]
        notes = {agent.iteration: f"its agent (pid {agent.pid}) {agent.said}" for agent in agents}
        interrupted = store.interrupt_running_iterations(loop.id, notes) if running[loop.id] else []
        found[loop.id] = Leftovers(interrupted, agents)
    return found


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
