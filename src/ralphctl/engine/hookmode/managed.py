"""Hook-mode loops under the loop manager: a stored loop's session when it launches, and the
end of one that no runner will ever run.

The manager arms a hook-mode loop's tracker when it creates the loop (``setup.prepare``), so a
loop that cannot be armed is refused at once; a queued loop launches later, from what its
tracker holds. A paused loop's session is continued (``--resume``) by its next runner. A
session only its runner can drive: once that runner is gone without a pause, the session is
not entered again, so such a loop is ended (``end_session``), never resumed.
"""

from __future__ import annotations

import time
from pathlib import Path

from ralphctl.domain.markers import parse_marker
from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.engine.hookmode.session import Session
from ralphctl.engine.hookmode.setup import HookModeError, first_prompt
from ralphctl.hook.arming import Armed
from ralphctl.hook.clock import iso
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.paths import tracker_path
from ralphctl.hook.state import CorruptTracker, loop_state
from ralphctl.hook.tracker import Tracker, TrackerError, load, update_fields
from ralphctl.store.records import LoopRecord


def session_of(loop: LoopRecord) -> Session:
    """The session of a stored hook-mode loop: a new one for a loop that has not run yet (its
    runtime budget restarts now: time spent queued does not count), the same one continued
    for a paused loop. HookModeError if its tracker is gone, unreadable or not in that state.
    """
    path = _tracker(loop)
    try:
        tracker = load(path)
    except TrackerError as exc:
        raise HookModeError(str(exc)) from None
    assert loop.agent_session_id is not None
    if loop.started_at is not None:
        return _continued(loop, path, tracker)
    if tracker is None or tracker.fields.get("active") is not True:
        raise HookModeError(f"the loop's tracker {path} is gone or no longer active")
    try:  # edited while the loop was queued? its budgets are checked as every Stop checks them
        loop_state(tracker, time.time())
    except CorruptTracker as exc:
        raise HookModeError(f"the loop's tracker {path} is corrupt: {exc}") from None
    update_fields(path, {"started_at": iso(time.time())})
    prompt = first_prompt(loop.task, _armed(path, tracker.fields))
    return Session(loop.agent_session_id, path, prompt)


def _continued(loop: LoopRecord, path: str, tracker: Tracker | None) -> Session:
    """A paused loop's session, its tracker active again from the next iteration on (its
    runtime budget counts the time it ran, not the time it was paused)."""
    assert loop.agent_session_id is not None
    if loop.status is not LoopStatus.PAUSED or tracker is None or not tracker.fields.get("paused"):
        raise HookModeError(
            f"loop {loop.id} ran in one {loop.agent} session (hook mode) that was not paused: "
            "it cannot be entered again; start a new loop (this one's history stays)"
        )
    now = time.time()
    changes: dict[str, Scalar] = {
        "active": True,
        "paused": False,
        "iteration": loop.iteration + 1,
        "started_at": iso(now - loop.runtime_s),
    }
    update_fields(path, changes)
    try:
        prompt = loop_state(Tracker(path, tracker.fields | changes, tracker.body), now).reason
    except CorruptTracker as exc:
        raise HookModeError(f"the loop's tracker {path} is corrupt: {exc}") from None
    return Session(loop.agent_session_id, path, prompt, resume=True)


def end_session(loop: LoopRecord, reason: StopReason) -> None:
    """Deactivate the tracker of a hook-mode loop that no runner runs, so that no Stop hook
    (of a session left running by a crash) continues it; a missing one is left missing."""
    path = _tracker(loop)
    try:
        tracker = load(path)
        if tracker is not None and tracker.fields.get("active") is True:
            changes: dict[str, Scalar] = {"active": False, "ended_reason": str(reason)}
            update_fields(path, changes | {"ended_at": iso(time.time())})
    except (OSError, TrackerError):
        pass  # the store has the loop's end; a tracker we cannot touch is reported by the hook


def _tracker(loop: LoopRecord) -> str:
    if loop.mode != "hook" or not loop.agent_session_id:
        raise HookModeError(f"loop {loop.id} is not a hook-mode loop with a session")
    return tracker_path(str(Path(loop.workdir)), loop.agent_session_id)


def _armed(path: str, fields: dict[str, Scalar]) -> Armed:
    """The arming, as the confirmation told the agent, from the tracker's frontmatter."""
    try:
        bound = _number(fields, "max_iterations")
        return Armed(
            path=path,
            session_id=_text(fields, "session_id"),
            token=_text(fields, "arm_token") or "",
            marker=parse_marker(_text(fields, "completion_marker") or ""),
            max_iterations=None if bound is None else int(bound),
            max_runtime_s=_number(fields, "max_runtime_s"),
            max_cost_usd=_number(fields, "max_cost_usd"),
            task=_text(fields, "task") or "",
        )
    except (TypeError, ValueError) as exc:
        raise HookModeError(f"the loop's tracker {path} is not as it was armed: {exc}") from None


def _text(fields: dict[str, Scalar], key: str) -> str | None:
    value = fields.get(key)
    return None if value is None else str(value)


def _number(fields: dict[str, Scalar], key: str) -> float | None:
    value = fields.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{key} is {value!r}, not a number")
    return value
