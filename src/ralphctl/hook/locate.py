"""Find the loop a Stop belongs to: the session's own tracker, a pending tracker it claims,
or the official plugin's state file. Stdlib and stat calls only until a loop is found.
"""

from __future__ import annotations

import os

from ralphctl.domain import defaults
from ralphctl.hook import paths
from ralphctl.hook.clock import epoch, iso
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.lock import FileLock
from ralphctl.hook.log import warn
from ralphctl.hook.tracker import Tracker, TrackerError, archive, load, save_fields

#: An unclaimed tracker older than its own runtime budget (or this) has expired: a loop
#: that could not have run that long can no longer be the one a session just armed.
DEFAULT_PENDING_TTL_S = defaults.MAX_RUNTIME_S


class Found:
    """A tracker that applies to the Stop: its path, its lock, and whose format it is."""

    __slots__ = ("legacy", "lock", "path")

    def __init__(self, path: str, lock: str, *, legacy: bool = False) -> None:
        self.path = path
        self.lock = lock
        self.legacy = legacy


def might_apply(project: str, session_id: str, *, legacy: bool = True) -> bool:
    """Cheap pre-check: False means no loop can apply, so the Stop passes through untouched.
    ``legacy``: the official plugin's state file may apply (Claude Code sessions only)."""
    try:
        own = load(paths.tracker_path(project, session_id))
        state = load(paths.legacy_path(project), legacy=True) if legacy else None
    except TrackerError:
        return True  # let the full path report it
    return (
        (own is not None and is_active(own.fields))
        or (own is None and vanished(project, session_id))
        or _has_pending(project)
        or (state is not None and legacy_applies(state.fields, session_id))
    )


def find(
    project: str,
    session_id: str,
    transcript_path: str | None,
    now: float,
    final_text: str | None = None,
    *,
    legacy: bool = True,
) -> Found | None:
    """The loop of this session, claiming a pending or (``legacy``: a Claude Code session)
    an unowned legacy one if needed."""
    own = paths.tracker_path(project, session_id)
    tracker = load(own)
    if tracker is not None and is_active(tracker.fields):
        return Found(own, paths.lock_for(own))
    if claimed := claim_pending(project, session_id, transcript_path, now, final_text):
        return Found(claimed, paths.lock_for(claimed))
    return _legacy(project, session_id, now) if legacy else None


def vanished(project: str, session_id: str) -> bool:
    """The session's directory exists but its tracker does not: ralphctl never deletes a
    tracker (it archives one only to write the next), so someone else did, mid-loop."""
    tracker = paths.tracker_path(project, session_id)
    return os.path.isdir(os.path.dirname(tracker)) and not os.path.lexists(tracker)


def is_active(fields: dict[str, Scalar]) -> bool:
    return fields.get("active") is True


def legacy_applies(fields: dict[str, Scalar], session_id: str) -> bool:
    """The plugin never reads ``active``; we honour ``active: false`` (our deactivation)."""
    owner = fields.get("session_id")
    return fields.get("active") is not False and owner in (None, "", session_id)


def claim_pending(
    project: str,
    session_id: str,
    transcript_path: str | None,
    now: float,
    final_text: str | None = None,
) -> str | None:
    """Claim, exactly once, a pending tracker armed in this session; returns its new path.

    A pending tracker carries the arming token printed into the arming session's context; a
    session whose transcript shows activity after the arming but not the token is another
    session, and may not claim it; without a transcript, one whose final text lacks it.
    The claim is a rename: of two sessions, one wins and the other gets ENOENT.
    """
    directory = paths.pending_dir(project)
    names = _pending_names(directory)
    if not names:
        return None
    from ralphctl.hook.transcript import may_have_armed

    for name in names:
        pending = os.path.join(directory, name)
        try:
            tracker = load(pending)
        except TrackerError as exc:
            warn(f"ignoring a pending tracker: {exc}", project)
            continue
        if tracker is None or not is_active(tracker.fields):
            continue
        if _expired(tracker, now):
            warn(f"{pending} was never claimed and has expired; removing it", project)
            _remove(pending)
            continue
        token, armed_at = tracker.fields.get("arm_token"), _started(tracker)
        if isinstance(token, str) and not may_have_armed(
            transcript_path, token, armed_at or now, final_text
        ):
            continue  # armed in another session
        if target := _claim(project, session_id, pending, now):
            return target
    return None


def _claim(project: str, session_id: str, pending: str, now: float) -> str | None:
    target = os.path.join(paths.make_session_dir(project, session_id), paths.TRACKER_NAME)
    with FileLock(paths.lock_for(target)):
        current = load(target)
        if current is not None and is_active(current.fields):
            return target
        if current is not None:
            archive(target)
        try:
            os.rename(pending, target)
        except FileNotFoundError:
            return None  # another session claimed it first
        claimed = load(target)
        if claimed is not None:
            changes: dict[str, Scalar] = {"session_id": session_id, "claimed_at": iso(now)}
            save_fields(target, claimed.fields | changes)
    return target


def _legacy(project: str, session_id: str, now: float) -> Found | None:
    path = paths.legacy_path(project)
    if not os.path.exists(path):
        return None
    lock = paths.legacy_lock(project)
    with FileLock(lock):
        tracker = load(path, legacy=True)
        if tracker is None or not legacy_applies(tracker.fields, session_id):
            return None
        if not tracker.fields.get("session_id"):
            if _older_than(tracker, now, DEFAULT_PENDING_TTL_S):
                warn(f"{path} has no session and is stale: deactivating it", project)
                stale: dict[str, Scalar] = {"active": False, "ended_reason": "stale"}
                save_fields(path, tracker.fields | stale, legacy=True)
                return None
            owner: dict[str, Scalar] = {"session_id": session_id, "claimed_at": iso(now)}
            save_fields(path, tracker.fields | owner, legacy=True)
    return Found(path, lock, legacy=True)


def _pending_names(directory: str) -> list[str]:
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(name for name in names if name.endswith(".md") and not name.startswith("."))


def _has_pending(project: str) -> bool:
    return bool(_pending_names(paths.pending_dir(project)))


def _expired(tracker: Tracker, now: float) -> bool:
    ttl = tracker.fields.get("max_runtime_s")
    limit = ttl if isinstance(ttl, int | float) and not isinstance(ttl, bool) else None
    return _older_than(tracker, now, limit or DEFAULT_PENDING_TTL_S)


def _older_than(tracker: Tracker, now: float, seconds: float) -> bool:
    """Started more than ``seconds`` ago; an unreadable start counts as infinitely old."""
    started = _started(tracker)
    return started is None or now - started > seconds


def _started(tracker: Tracker) -> float | None:
    started = tracker.fields.get("started_at")
    try:
        return epoch(started) if isinstance(started, str) else None
    except ValueError:
        return None


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
