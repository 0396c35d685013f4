"""The prompt pipeline: the task plus the loop context an agent with a fresh context needs.

A workflow's loop (docs/workflows.md) adds two things: its ``continueMessage`` opens the prompt
from iteration 2 on, and its tracker file is named in every prompt, with how to declare
completion there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ralphctl.domain.conditions import Remaining
from ralphctl.domain.markers import Marker
from ralphctl.domain.steering import section

HISTORY_SHOWN = 5
SUMMARY_CHARS = 160
ERROR_CHARS = 1200


@dataclass(frozen=True, slots=True)
class PastIteration:
    n: int
    status: str
    duration_s: float
    summary: str


@dataclass(frozen=True, slots=True)
class PromptContext:
    task: str
    iteration: int
    max_iterations: int | None
    remaining: Remaining
    marker: Marker
    history: Sequence[PastIteration] = ()
    last_error: str | None = None
    notes: Sequence[str] = ()  # what the last iteration's analysis and gates ask for
    tracker: str | None = None  # the loop's tracker file, as the agent should open it
    continue_message: str | None = None  # opens the prompt from iteration 2 on
    messages: Sequence[str] = ()  # what the user told the loop since the last prompt, oldest first


def build_prompt(ctx: PromptContext) -> str:
    """Render one iteration's prompt. Deterministic: the same context gives the same text."""
    of_n = f" of at most {ctx.max_iterations}" if ctx.max_iterations else ""
    parts = [ctx.continue_message.strip(), ""] if ctx.continue_message and ctx.iteration > 1 else []
    parts += [
        ctx.task.strip(),
        "",
        "---",
        "## Loop context (from ralphctl)",
        f"This is iteration {ctx.iteration}{of_n} of an autonomous loop. Every iteration starts",
        "with a fresh context: the files and the git history of the work tree are your memory,",
        "so read them first and leave them in a state the next iteration can build on.",
        f"Budget left: {_budget_left(ctx.remaining)}.",
    ]
    if ctx.history:
        parts += ["", "Previous iterations (most recent last):"]
        parts += [_history_line(past) for past in ctx.history[-HISTORY_SHOWN:]]
    if ctx.last_error:
        parts += ["", "The previous iteration failed with:", _clip(ctx.last_error, ERROR_CHARS)]
    if ctx.notes:
        parts += ["", "Notes on the previous iteration:"]
        parts += [f"- {_clip(note, ERROR_CHARS * 2)}" for note in ctx.notes]
    if ctx.messages:
        parts += ["", *section(ctx.messages)]
    if ctx.tracker:
        parts += ["", *_tracker_instructions(ctx.tracker, ctx.marker)]
    parts += ["", *_marker_instructions(ctx.marker)]
    return "\n".join(parts) + "\n"


def _budget_left(left: Remaining) -> str:
    items = []
    if left.iterations is not None:
        items.append(f"{left.iterations} iterations")
    if left.runtime_s is not None:
        items.append(f"{left.runtime_s / 60:.0f} min")
    if left.cost_usd is not None:
        items.append(f"${left.cost_usd:.2f}")
    if left.tokens is not None:
        items.append(f"{left.tokens} tokens")
    return ", ".join(items) or "unlimited"


def _history_line(past: PastIteration) -> str:
    summary = _clip(" ".join(past.summary.split()), SUMMARY_CHARS) or "(no text)"
    return f"- #{past.n} {past.status}, {past.duration_s:.0f}s: {summary}"


def _tracker_instructions(tracker: str, marker: Marker) -> list[str]:
    return [
        f"Progress tracker: `{tracker}`. Read it first and keep it up to date: it is what the",
        "next iteration will know of this one. When the whole task is done and verified, make",
        f"its last line `{marker.signal}`; if you cannot go on, `{marker.blocked_signal}`.",
    ]


def _marker_instructions(marker: Marker) -> list[str]:
    done, blocked = marker.signal, marker.blocked_signal
    return [
        f"When the whole task is done and verified, end your reply with the line `{done}`.",
        f"If you cannot continue without a human, end your reply with the line `{blocked}`.",
        "Never write either line in any other case: it ends the loop.",
    ]


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
