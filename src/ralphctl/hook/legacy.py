"""Anthropic's ralph-loop plugin state, ``.claude/ralph-loop.local.md``, honoured minus its bugs.

Same semantics: ``iteration`` counts from 1, the loop stops once it reaches
``max_iterations``, ``completion_promise`` ends it, ``session_id`` isolates it, and the prompt
(the body) is re-injected as the reason. Fixed: a state without ``session_id`` is claimed
by the first session that stops (and is ignored once stale) instead of hijacking every
session; only a real, un-negated ``<promise>`` tag completes; ``max_iterations: 0`` is
capped; a corrupt value deactivates the loop (``active: false``) instead of deleting the
user's file.
"""

from __future__ import annotations

from ralphctl.domain import defaults
from ralphctl.domain.markers import promise
from ralphctl.domain.stoprules import Budgets, Totals
from ralphctl.hook.state import CorruptTracker, optional_int, optional_str, required_int
from ralphctl.hook.stop import LoopState
from ralphctl.hook.tracker import Tracker

#: What ``max_iterations: 0`` ("unlimited" for the plugin) means here.
UNLIMITED_CAP = defaults.MAX_ITERATIONS


def legacy_state(tracker: Tracker) -> LoopState:
    """The decision's view of the plugin's state file."""
    fields = tracker.fields
    iteration = required_int(fields, "iteration", minimum=0)
    max_iterations = required_int(fields, "max_iterations", minimum=0)
    note = None
    if max_iterations == 0:
        max_iterations = UNLIMITED_CAP
        note = f"max_iterations 0 (unlimited) is capped at {UNLIMITED_CAP}"
    text = optional_str(fields, "completion_promise")
    marker = None
    if text and text != "null":  # the plugin writes the bare word null for "no promise"
        try:
            marker = promise(text)
        except ValueError as exc:
            raise CorruptTracker(f"completion_promise: {exc}") from None
    prompt = tracker.body.strip()
    if not prompt:
        raise CorruptTracker("the prompt (the text after the frontmatter) is empty")
    if marker is not None:
        prompt += (
            f"\n\nTo stop: output {marker.signal} "
            "(only when that statement is completely and unequivocally true)"
        )
    return LoopState(
        iteration=iteration,
        budgets=Budgets(max_iterations=max_iterations),
        totals=Totals(),
        marker=marker,
        reason=prompt,
        last_decision=optional_str(fields, "last_decision"),
        stop_hook_active_count=optional_int(fields, "stop_hook_active_count", minimum=0) or 0,
        cap_overrides=optional_int(fields, "cap_overrides", minimum=0) or 0,
        note=note,
    )
