"""List, show and cancel a project's loops (``/ralph-status``, ``/cancel-ralph``, ``ralphctl``)."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass

from ralphctl.hook import paths
from ralphctl.hook.clock import epoch, iso
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.locate import is_active, legacy_applies
from ralphctl.hook.lock import FileLock
from ralphctl.hook.record import StopRecord
from ralphctl.hook.tracker import TrackerError, load, save_fields

NO_LOOP = "No active Ralph loop"


@dataclass(frozen=True, slots=True)
class LoopInfo:
    """One tracker of a project as ``ralphctl sessions`` shows it."""

    kind: str  # "session", "pending" (armed, not claimed yet) or "legacy" (official plugin)
    path: str
    session_id: str | None = None
    active: bool = False
    paused: bool = False  # by ralphctl's runner: ``ralphctl resume`` continues it
    iteration: int | None = None
    max_iterations: int | None = None
    completion_marker: str | None = None
    started_at: str | None = None
    last_decision: str | None = None
    last_decision_at: str | None = None
    ended_reason: str | None = None
    cap_overrides: int = 0
    task: str | None = None
    loop_id: str | None = None
    problem: str | None = None  # set when the tracker cannot be read

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @property
    def ended(self) -> str:
        return f"ended ({self.ended_reason or 'inactive'})"

    def describe(self) -> str:
        """One line for humans."""
        if self.problem:
            return f"{self.kind} tracker {self.path}: unreadable ({self.problem})"
        owner = {"pending": "pending, not claimed yet", "legacy": "official plugin state"}
        who = f"session {self.session_id}" if self.session_id else owner.get(self.kind, "?")
        limit = f"/{self.max_iterations}" if self.max_iterations else ""
        state = "active" if self.active else "paused" if self.paused else self.ended
        extra = f", {self.cap_overrides} block-cap override(s)" if self.cap_overrides else ""
        return (
            f"Ralph loop ({who}): {state}, iteration {self.iteration}{limit}, "
            f"completes on {self.completion_marker}{extra}; tracker {self.path}"
        )


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The result of a cancel: the message to print and, if one was cancelled, its record."""

    message: str
    loop: LoopInfo | None = None
    record: StopRecord | None = None


def list_loops(project: str) -> list[LoopInfo]:
    """Every current tracker of ``project``: sessions (not archived ones), pending, legacy.

    A symlinked ``.ralph`` (or sessions, session or pending directory) is never followed: it
    is listed as a problem."""
    found: list[LoopInfo | None] = []
    try:
        sessions = paths.sessions_dir(project)
        found += [
            _info("session", os.path.join(paths.session_dir(project, name), paths.TRACKER_NAME))
            for name in _names(sessions)
            if paths.valid_session_id(name)
        ]
        pending = paths.pending_dir(project)
        found += [
            _info("pending", os.path.join(pending, name))
            for name in _names(pending)
            if name.endswith(".md") and not name.startswith(".")
        ]
    except paths.UnsafeDirectory as exc:
        found.append(LoopInfo("session", os.path.join(project, paths.RALPH_DIR), problem=str(exc)))
    found.append(_info("legacy", paths.legacy_path(project)))
    return [info for info in found if info is not None]


def _select(
    loops: list[LoopInfo], session_id: str | None
) -> tuple[list[LoopInfo], LoopInfo | None]:
    """(the active loops, the one a cancel means: the session's, else the only active one)."""
    active = [info for info in loops if info.active]
    if session_id is not None:
        mine = [info for info in active if info.session_id == session_id]
        return active, mine[0] if mine else None
    return active, active[0] if len(active) == 1 else None


def cancel(project: str, session_id: str | None = None, now: float | None = None) -> Cancelled:
    """Deactivate the session's loop (or the project's only active one).

    With several active loops and no session, nothing is cancelled and the message lists them.
    """
    active, target = _select(list_loops(project), session_id)
    if target is None:
        if len(active) > 1 and session_id is None:
            listing = "\n".join(f"  {info.describe()}" for info in active)
            return Cancelled(f"Several active Ralph loops; say which with --session:\n{listing}")
        return Cancelled(NO_LOOP)
    moment = time.time() if now is None else now
    if not _deactivate(project, target, moment):
        return Cancelled(NO_LOOP)
    who = f"session {target.session_id}" if target.session_id else target.kind
    message = f"Cancelled the Ralph loop of {who} (was at iteration {target.iteration})."
    return Cancelled(message, target, _record(project, target, moment))


def _deactivate(project: str, target: LoopInfo, now: float) -> bool:
    """Under the tracker's lock; a pending tracker (nothing written in it yet) is removed."""
    legacy = target.kind == "legacy"
    lock = paths.legacy_lock(project) if legacy else paths.lock_for(target.path)
    with FileLock(lock):
        tracker = load(target.path, legacy=legacy)
        if tracker is None:
            return False
        fields = tracker.fields
        owner = target.session_id or ""
        if not (legacy_applies(fields, owner) if legacy else is_active(fields)):
            return False  # it ended meanwhile
        if target.kind == "pending":
            os.unlink(target.path)
            return True
        changes: dict[str, Scalar] = {
            "active": False,
            "ended_reason": "user_stop",
            "ended_at": iso(now),
            "last_decision": "allow",
        }
        return save_fields(target.path, fields | changes, legacy=legacy)


def _record(project: str, target: LoopInfo, now: float) -> StopRecord | None:
    if not target.loop_id:
        return None
    try:
        started = epoch(target.started_at or "")
    except ValueError:
        started = now
    return StopRecord(
        loop_id=target.loop_id,
        project=project,
        agent="claude",
        session_id=target.session_id,
        task=target.task or "",
        loop_started_at=started,
        ended_at=now,
        stop_reason="user_stop",
        stop_detail="cancelled",
    )


def _names(directory: str) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _info(kind: str, path: str) -> LoopInfo | None:
    legacy = kind == "legacy"
    try:
        tracker = load(path, legacy=legacy)
    except TrackerError as exc:
        return LoopInfo(kind, path, problem=str(exc))
    if tracker is None:
        return None
    fields = tracker.fields
    active = fields.get("active") is not False if legacy else is_active(fields)
    return LoopInfo(
        kind=kind,
        path=path,
        session_id=_str(fields.get("session_id")),
        active=active,
        paused=fields.get("paused") is True,
        iteration=_int(fields.get("iteration")),
        max_iterations=_int(fields.get("max_iterations")),
        completion_marker=_str(fields.get("completion_promise" if legacy else "completion_marker")),
        started_at=_str(fields.get("started_at")),
        last_decision=_str(fields.get("last_decision")),
        last_decision_at=_str(fields.get("last_decision_at")),
        ended_reason=_str(fields.get("ended_reason")),
        cap_overrides=_int(fields.get("cap_overrides")) or 0,
        task=_str(fields.get("task")) or (tracker.body.strip() if legacy else None),
        loop_id=_str(fields.get("loop_id")),
    )


def _str(value: Scalar) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Scalar) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
