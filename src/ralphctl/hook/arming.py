"""Arm a loop: write the tracker that a session's Stop hook will find.

With a session id (``--session``, or ``CLAUDE_CODE_SESSION_ID`` from Claude Code 2.1.132 on)
the tracker goes straight to ``.ralph/sessions/<id>/loop-tracker.md``. Without one it is
*pending* (``.ralph/pending/<token>.md``): the first Stop of the session whose transcript
shows the arming token (printed in the confirmation, so it lands in that session's context)
claims it, exactly once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from ralphctl.domain import defaults, numbers
from ralphctl.domain.markers import Marker, detect_in_tracker, parse_marker
from ralphctl.domain.money import format_usd
from ralphctl.hook import paths
from ralphctl.hook.clock import iso
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.locate import is_active
from ralphctl.hook.lock import FileLock
from ralphctl.hook.tracker import TrackerError, archive, load, new_loop_id, write

DEFAULT_TEMPLATE = "# Loop Progress\n\n_In progress_"


class ArmError(ValueError):
    """The loop cannot be armed as asked; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Armed:
    """An armed loop, and what to tell the agent about it."""

    path: str
    session_id: str | None
    token: str
    marker: Marker
    max_iterations: int | None
    max_runtime_s: float | None
    max_cost_usd: float | None
    task: str
    archived: str | None = None

    def confirmation(self) -> str:
        """Short text for the slash command's output, which becomes the agent's context."""
        who = (
            f"for session {self.session_id}"
            if self.session_id
            else f"(pending: the next stop of this session claims it; token {self.token})"
        )
        bounds = [
            f"{self.max_iterations} iterations" if self.max_iterations else "no iteration limit",
            f"{_duration(self.max_runtime_s)} runtime"
            if self.max_runtime_s
            else "no runtime limit",
        ]
        if self.max_cost_usd is not None:
            bounds.append(f"{format_usd(self.max_cost_usd)} cost")
        lines = [
            f"Ralph loop armed {who}.",
            f"Tracker: {self.path}",
            f"Bounds: {', '.join(bounds)}.",
        ]
        if self.archived:
            lines.append(f"The previous tracker was kept as {self.archived}.")
        if not self.session_id:  # a CLI without a transcript finds its session by the reply
            lines.append(f"Quote the token {self.token} in your reply to this message.")
        lines += [
            "",
            "Work on the task. Each time you stop you will be asked to continue; keep your",
            "progress notes in the tracker. When the task is completely done, and only then,",
            "end your final message with this exact line:",
            self.marker.signal,
            f"If you cannot go on, end it with: <{self.marker.tag}>BLOCKED: the reason"
            f"</{self.marker.tag}>",
        ]
        return "\n".join(lines)


def arm(
    project: str,
    prompt: str,
    *,
    session_id: str | None = None,
    max_iterations: int | None = defaults.MAX_ITERATIONS,
    completion_signal: str = defaults.COMPLETION_SIGNAL,
    max_runtime_s: float | None = defaults.MAX_RUNTIME_S,
    max_cost_usd: float | None = None,
    max_tokens: int | None = None,
    continue_message: str = defaults.CONTINUE_MESSAGE,
    template: str = DEFAULT_TEMPLATE,
    replace: bool = False,
    clear_context: bool = False,
    now: float | None = None,
) -> Armed:
    """Write a new loop's tracker. ``max_iterations=None`` is unlimited (needs a runtime).
    ``clear_context``: each block asks the CLI for a fresh context (Gemini CLI only).

    Refuses a second active loop for the same session unless ``replace``; the replaced (or
    a finished) tracker is kept next to the new one as ``loop-tracker.N.md``.
    """
    task = prompt.strip()
    if not task:
        raise ArmError("the prompt is empty: say what the loop should do")
    _check_bounds(max_iterations, max_runtime_s, max_cost_usd, max_tokens)
    try:
        marker = parse_marker(completion_signal)
    except ValueError as exc:
        raise ArmError(f"completion signal: {exc}") from None
    if session_id is not None and not paths.valid_session_id(session_id):
        raise ArmError(f"not a valid session id: {session_id!r}")
    body = f"## Task\n\n{task}\n\n{template.strip()}\n"
    if detect_in_tracker(body, marker).evidence is not None:
        raise ArmError(
            "the tracker template's last line already declares completion or BLOCKED: "
            "the loop would end at once; end the template with something else"
        )
    moment = time.time() if now is None else now
    token = os.urandom(8).hex()
    fields: dict[str, Scalar] = {
        "active": True,
        "session_id": session_id,
        "iteration": 1,
        "max_iterations": max_iterations,
        "completion_marker": marker.signal,
        "started_at": iso(moment),
        "max_runtime_s": None if max_runtime_s is None else float(max_runtime_s),
        "max_cost_usd": None if max_cost_usd is None else float(max_cost_usd),
        "max_tokens": max_tokens,
        "cost_usd": 0.0,
        "tokens": 0,
        "continue_message": continue_message.strip() or defaults.CONTINUE_MESSAGE,
        "task": task,
        "loop_id": new_loop_id(),
        "arm_token": token,
        "last_decision": None,
        "last_decision_at": None,
        "stop_hook_active_count": 0,
        "cap_overrides": 0,
        "ended_reason": None,
        "ended_at": None,
    }
    if clear_context:
        fields["clear_context"] = True
    try:
        path, archived = _write_tracker(project, session_id, token, fields, body, replace)
    except paths.UnsafeDirectory as exc:
        raise ArmError(str(exc)) from None
    return Armed(
        path=path,
        session_id=session_id,
        token=token,
        marker=marker,
        max_iterations=max_iterations,
        max_runtime_s=max_runtime_s,
        max_cost_usd=max_cost_usd,
        task=task,
        archived=archived,
    )


def _write_tracker(
    project: str,
    session_id: str | None,
    token: str,
    fields: dict[str, Scalar],
    body: str,
    replace: bool,
) -> tuple[str, str | None]:
    """Write the new tracker (pending without a session); returns it and any archived one.
    UnsafeDirectory for a project no loop belongs in, or a symlinked ``.ralph`` directory."""
    paths.check_project(project)
    if session_id is None:
        path = os.path.join(paths.make_pending_dir(project), f"{token}.md")
        write(path, fields, body)
        return path, None
    path = os.path.join(paths.make_session_dir(project, session_id), paths.TRACKER_NAME)
    with FileLock(paths.lock_for(path)):
        archived = _make_room(path, replace)
        write(path, fields, body)
    return path, archived


def _duration(seconds: float) -> str:
    """``4h``, ``90m``, ``45s``: the largest unit that divides evenly."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def _check_bounds(
    max_iterations: int | None,
    max_runtime_s: float | None,
    max_cost_usd: float | None,
    max_tokens: int | None,
) -> None:
    """The bounds, checked as every other way in checks them (``ralphctl.domain.numbers``)."""
    if max_iterations == 0:
        raise ArmError(
            "max iterations must be at least 1, not 0 "
            "(0 is not 'unlimited': say --unlimited if you mean it)"
        )
    if max_iterations is None and max_runtime_s is None:
        raise ArmError("an unlimited loop needs a runtime limit (--max-runtime)")
    checks: tuple[tuple[str, object, Callable[[object], object]], ...] = (
        ("max iterations", max_iterations, _whole),
        ("max runtime", max_runtime_s, _runtime),
        ("max cost", max_cost_usd, numbers.cost),
        ("max tokens", max_tokens, _whole),
    )
    for name, value, check in checks:
        if value is not None:
            try:
                check(value)
            except ValueError as exc:
                raise ArmError(f"{name}: {exc}") from None


def _whole(value: object) -> int:
    return numbers.whole(value, minimum=1)


def _runtime(value: object) -> float:
    return numbers.duration(value, allow_zero=False)


def _make_room(path: str, replace: bool) -> str | None:
    """Archive the session's previous tracker; refuse if it is active and not ``replace``."""
    try:
        current = load(path)
    except TrackerError:
        return archive(path)  # unreadable: keep it aside, never delete it
    if current is None:
        return None
    if is_active(current.fields) and not replace:
        fields = current.fields
        raise ArmError(
            f"this session already has an active Ralph loop (iteration {fields.get('iteration')}"
            f"/{fields.get('max_iterations')}, {path}): cancel it first (/cancel-ralph or "
            "`ralphctl cancel`), or pass --replace"
        )
    return archive(path)
