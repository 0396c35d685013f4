"""The Stop decision, pure: a loop's state and the agent's last words in, an intent out.

Plain ``__slots__`` classes rather than dataclasses: each dataclass costs about a
millisecond to create at import, and this module is on the Stop hook's hot path.

The seed's flow on top of the brain: an inactive or missing loop is handled before we get
here; then ``domain.stoprules.first_stop`` decides with the rules of fresh mode
(completion, blocked, iterations, runtime, cost, tokens; the first that fires wins), so a
promise kept on the last allowed iteration still counts as completion. Otherwise the
iteration counter moves on and the stop is blocked. Reasons are ``StopReason`` values as
plain strings: ``enum`` is not imported on the hook's path.
"""

from __future__ import annotations

from ralphctl.domain import stoprules
from ralphctl.domain.markers import (
    Detection,
    Marker,
    detect,
    detect_in_tracker,
    first_declaration,
)
from ralphctl.domain.stoprules import Budgets, Totals, first_stop
from ralphctl.hook.frontmatter import Scalar

BLOCK = "block"
ALLOW = "allow"
CLAUDE_CODE = "Claude Code"
CAP_NOTE = (
    "the previous turn was ended by Claude Code, not by this hook (its block cap, see "
    "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP, or an interrupt): that was not a completion"
)
#: The same note for the other CLIs; ``{cli}`` is the CLI's name.
OTHER_CAP_NOTE = (
    "the previous turn was ended by {cli}, not by this hook (its own cap on continuations, "
    "or an interrupt): that was not a completion"
)
#: A loop ended because the CLI would not deliver another block (Cursor's loop_limit).
AGENT_CAP_REASON = "interrupted"
NOTHING = Detection(completed=False, blocked_reason=None, evidence=None)


class StopBlock:
    """Keep the agent working: ``reason`` is its next instruction (never empty).
    ``clear_context`` asks the CLI for a fresh context first (Gemini CLI only)."""

    __slots__ = ("clear_context", "reason", "system_message")

    def __init__(
        self, reason: str, system_message: str | None = None, *, clear_context: bool = False
    ) -> None:
        self.reason = reason
        self.system_message = system_message
        self.clear_context = clear_context

    def _key(self) -> tuple[str, str | None, bool]:
        return (self.reason, self.system_message, self.clear_context)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StopBlock) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        clear = ", clear_context=True" if self.clear_context else ""
        return f"StopBlock({self.reason!r}, {self.system_message!r}{clear})"


class Allow:
    """Let the agent stop; ``system_message`` tells the user why, if there is news."""

    __slots__ = ("system_message",)

    def __init__(self, system_message: str | None = None) -> None:
        self.system_message = system_message

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Allow) and self.system_message == other.system_message

    def __hash__(self) -> int:
        return hash(self.system_message)

    def __repr__(self) -> str:
        return f"Allow({self.system_message!r})"


Intent = StopBlock | Allow


class LoopState:
    """What the decision needs from a tracker, ours or the official plugin's."""

    __slots__ = (
        "body",
        "budgets",
        "cap_overrides",
        "clear_context",
        "iteration",
        "last_decision",
        "marker",
        "note",
        "reason",
        "stop_hook_active_count",
        "totals",
    )

    def __init__(
        self,
        *,
        iteration: int,
        budgets: Budgets,
        totals: Totals,
        marker: Marker | None,
        reason: str,
        body: str | None = None,
        last_decision: str | None = None,
        stop_hook_active_count: int = 0,
        cap_overrides: int = 0,
        note: str | None = None,
        clear_context: bool = False,
    ) -> None:
        self.iteration = iteration  # the iteration that just ended, counting from 1
        self.budgets = budgets
        self.totals = totals  # runtime, cost and tokens so far; iterations come from above
        self.marker = marker  # None: no completion promise, only the budgets end the loop
        self.reason = reason  # what a block tells the agent
        self.body = body  # a tracker body, whose last line may declare completion
        self.last_decision = last_decision
        self.stop_hook_active_count = stop_hook_active_count
        self.cap_overrides = cap_overrides
        self.note = note  # added to every system message (e.g. a capped legacy budget)
        self.clear_context = clear_context  # each block asks for a fresh context (Gemini)


class Ended:
    """Why a loop ended: a ``StopReason`` value and its detail."""

    __slots__ = ("detail", "reason")

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        self.detail = detail

    def __repr__(self) -> str:
        return f"Ended({self.reason!r}, {self.detail!r})"


class Outcome:
    """The intent, the frontmatter changes that record it, and why the loop ended (if so)."""

    __slots__ = ("cap_override", "changes", "detection", "ended", "intent")

    def __init__(
        self,
        intent: Intent,
        changes: dict[str, Scalar],
        detection: Detection,
        ended: Ended | None = None,
        cap_override: bool = False,
    ) -> None:
        self.intent = intent
        self.changes = changes
        self.detection = detection
        self.ended = ended
        self.cap_override = cap_override


def decide(
    state: LoopState,
    final_text: str,
    *,
    stop_hook_active: bool,
    now: str,
    cli: str = CLAUDE_CODE,
    agent_cap: str | None = None,
) -> Outcome:
    """Decide one Stop of an active loop. ``now`` is the ISO time to record; ``cli`` names
    the agent CLI in messages.

    ``stop_hook_active`` never ends the loop (the bound is max_iterations), it is counted.
    A Stop without it while our last word was "block" means the CLI ended the previous turn
    itself (its block cap, or an interrupt): counted and reported, never a completion.
    ``agent_cap`` (why) says the CLI would drop a block now (Cursor's loop_limit): the loop
    then ends there as interrupted unless a stop rule ended it first.
    """
    changes: dict[str, Scalar] = {"last_decision_at": now}
    notes = [state.note] if state.note else []
    if stop_hook_active:
        changes["stop_hook_active_count"] = state.stop_hook_active_count + 1
    cap_override = not stop_hook_active and state.last_decision == BLOCK
    if cap_override:
        changes["cap_overrides"] = state.cap_overrides + 1
        notes.append(CAP_NOTE if cli == CLAUDE_CODE else OTHER_CAP_NOTE.format(cli=cli))
    detection = _detect(state, final_text)
    totals = state.totals
    fired = first_stop(
        Totals(
            iterations=state.iteration,
            runtime_s=totals.runtime_s,
            cost_usd=totals.cost_usd,
            tokens=totals.tokens,
            consecutive_errors=totals.consecutive_errors,
        ),
        state.budgets,
        completed=detection.completed,
        blocked_reason=detection.blocked_reason,
    )
    if fired is None and agent_cap is not None:
        fired = (AGENT_CAP_REASON, agent_cap)
    if fired is not None:
        ended = Ended(*fired)
        changes |= {
            "active": False,
            "last_decision": ALLOW,
            "ended_reason": ended.reason,
            "ended_at": now,
        }
        message = _join(_ended_message(state, ended), notes)
        return Outcome(Allow(message), changes, detection, ended, cap_override)
    following = state.iteration + 1
    changes |= {"iteration": following, "last_decision": BLOCK}
    progress = f"Ralph iteration {following}{_of(state.budgets)}"
    reason = f"{state.reason.strip() or progress}\n\n({progress})"
    block = StopBlock(reason, _join(progress, notes), clear_context=state.clear_context)
    return Outcome(block, changes, detection, None, cap_override)


def _detect(state: LoopState, final_text: str) -> Detection:
    """The agent's final text first; then the tracker body's last line (``first_declaration``)."""
    if state.marker is None:
        return NOTHING
    final = detect(final_text, state.marker, prompt=state.reason)
    tracker = None if state.body is None else detect_in_tracker(state.body, state.marker)
    return first_declaration(final, tracker)


def _of(budgets: Budgets) -> str:
    return "" if budgets.max_iterations is None else f"/{budgets.max_iterations}"


def _ended_message(state: LoopState, ended: Ended) -> str:
    n = state.iteration
    if ended.reason == stoprules.COMPLETION:
        return f"Ralph loop complete at iteration {n}{_of(state.budgets)}."
    if ended.reason == stoprules.BLOCKED:
        return f"Ralph loop blocked at iteration {n}: {ended.detail}"
    if ended.reason == stoprules.MAX_ITERATIONS:
        return f"Ralph loop stopped: max iterations ({state.budgets.max_iterations}) reached."
    if ended.reason == AGENT_CAP_REASON:
        return f"Ralph loop stopped at iteration {n}: {ended.detail} (not a completion)."
    return f"Ralph loop stopped at iteration {n}: {ended.reason} {ended.detail}."


def _join(message: str, notes: list[str]) -> str:
    return " | ".join([message, *notes])
