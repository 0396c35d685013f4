"""Loop states, the legal transitions between them, and why a loop stopped."""

from __future__ import annotations

from enum import StrEnum

from ralphctl.domain import stoprules


class LoopStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    RATE_LIMITED = "rate_limited"
    COMPLETED = "completed"
    BLOCKED = "blocked"
    STOPPED = "stopped"
    FAILED = "failed"

    @property
    def is_active(self) -> bool:
        """True while the loop still has work scheduled (it may be waiting)."""
        return self in _ACTIVE


_ACTIVE = frozenset(
    {LoopStatus.PENDING, LoopStatus.RUNNING, LoopStatus.PAUSED, LoopStatus.RATE_LIMITED}
)

#: Every legal move. Ended loops other than ``completed`` may be resumed (with new budgets).
TRANSITIONS: dict[LoopStatus, frozenset[LoopStatus]] = {
    LoopStatus.PENDING: frozenset({LoopStatus.RUNNING, LoopStatus.STOPPED}),
    LoopStatus.RUNNING: frozenset(
        {
            LoopStatus.PAUSED,
            LoopStatus.RATE_LIMITED,
            LoopStatus.COMPLETED,
            LoopStatus.BLOCKED,
            LoopStatus.STOPPED,
            LoopStatus.FAILED,
        }
    ),
    LoopStatus.PAUSED: frozenset({LoopStatus.RUNNING, LoopStatus.STOPPED}),
    LoopStatus.RATE_LIMITED: frozenset({LoopStatus.RUNNING, LoopStatus.PAUSED, LoopStatus.STOPPED}),
    LoopStatus.COMPLETED: frozenset(),
    LoopStatus.BLOCKED: frozenset({LoopStatus.RUNNING}),
    LoopStatus.STOPPED: frozenset({LoopStatus.RUNNING}),
    LoopStatus.FAILED: frozenset({LoopStatus.RUNNING}),
}


class IllegalTransition(ValueError):
    """A state change that the loop state machine does not allow."""

    def __init__(self, current: LoopStatus, target: LoopStatus) -> None:
        allowed = ", ".join(sorted(TRANSITIONS[current])) or "none (it has ended)"
        super().__init__(f"cannot go from {current} to {target}; allowed from {current}: {allowed}")
        self.current = current
        self.target = target


def transition(current: LoopStatus, target: LoopStatus) -> LoopStatus:
    """Return ``target`` if ``current -> target`` is legal, else raise IllegalTransition."""
    if target not in TRANSITIONS[current]:
        raise IllegalTransition(current, target)
    return target


class Runner(StrEnum):
    """What drives an active loop, as far as a process reading the store can tell."""

    ALIVE = "alive"  # a ralphctl runner process runs it
    GONE = "gone"  # the runner recorded for it has died
    NONE = "none"  # none ever: in hook mode, a Claude Code session ralphctl did not launch


def why_not_resumable(status: LoopStatus, mode: str, runner: Runner) -> str | None:
    """Why ``ralphctl resume`` cannot continue this loop, or None when it can.

    The one rule behind ``resume`` (CLI and API) and what ``status`` offers: a completed loop
    is done; a running one runs; a hook-mode loop lives in one Claude Code session, which
    ralphctl continues only when it is pending or paused, and which it never drives at all
    when the user's own session runs it (``/ralph-loop``).
    """
    if status is LoopStatus.COMPLETED:
        return "it has completed; start a new loop"
    running = status in (LoopStatus.RUNNING, LoopStatus.RATE_LIMITED)
    if running and runner is Runner.ALIVE:
        return "it is running"
    if status is LoopStatus.PAUSED and runner is Runner.ALIVE:
        return "its runner waits for an answer to the agent's question: answer with ralphctl tell"
    if mode != "hook" or status in (LoopStatus.PENDING, LoopStatus.PAUSED):
        return None
    if running and runner is Runner.NONE:
        return (
            "it runs in a Claude Code session that ralphctl did not launch (armed with "
            "/ralph-loop): its Stop hook drives it there; /cancel-ralph ends it"
        )
    return (
        "it ran in one Claude Code session (hook mode), which ended without a pause and "
        "cannot be entered again: start a new loop (this one's history stays)"
    )


class StopReason(StrEnum):
    """Why a loop ended; the reasons of the stop rules are spelled in ``stoprules``."""

    COMPLETION = stoprules.COMPLETION
    BLOCKED = stoprules.BLOCKED
    MAX_ITERATIONS = stoprules.MAX_ITERATIONS
    MAX_RUNTIME = stoprules.MAX_RUNTIME
    MAX_COST = stoprules.MAX_COST
    MAX_TOKENS = stoprules.MAX_TOKENS
    CIRCUIT_BREAKER = stoprules.CIRCUIT_BREAKER
    USER_STOP = "user_stop"
    INTERRUPTED = "interrupted"
    AGENT_UNAVAILABLE = "agent_unavailable"
    STORE_FAILED = "store_failed"  # the database kept failing under a managed loop

    @property
    def status(self) -> LoopStatus:
        """The status a loop ends in for this reason."""
        return _STATUS_OF.get(self, LoopStatus.STOPPED)

    @property
    def exit_code(self) -> int:
        """The process exit code of ``ralphctl run`` for this reason."""
        return _EXIT_CODE_OF[self]


_STATUS_OF = {
    StopReason.COMPLETION: LoopStatus.COMPLETED,
    StopReason.BLOCKED: LoopStatus.BLOCKED,
    StopReason.CIRCUIT_BREAKER: LoopStatus.FAILED,
    StopReason.AGENT_UNAVAILABLE: LoopStatus.FAILED,
    StopReason.STORE_FAILED: LoopStatus.FAILED,
}

EXIT_COMPLETED = 0
EXIT_LIMIT = 1
EXIT_USAGE = 2
EXIT_FAILED = 3
EXIT_BLOCKED = 4
EXIT_INTERRUPTED = 130

_EXIT_CODE_OF = {
    StopReason.COMPLETION: EXIT_COMPLETED,
    StopReason.BLOCKED: EXIT_BLOCKED,
    StopReason.MAX_ITERATIONS: EXIT_LIMIT,
    StopReason.MAX_RUNTIME: EXIT_LIMIT,
    StopReason.MAX_COST: EXIT_LIMIT,
    StopReason.MAX_TOKENS: EXIT_LIMIT,
    StopReason.CIRCUIT_BREAKER: EXIT_FAILED,
    StopReason.AGENT_UNAVAILABLE: EXIT_FAILED,
    StopReason.STORE_FAILED: EXIT_FAILED,
    StopReason.USER_STOP: EXIT_INTERRUPTED,
    StopReason.INTERRUPTED: EXIT_INTERRUPTED,
}
