"""A session whose agent names it: the loop takes the id the agent gives.

Claude Code starts a session under the id ralphctl chose; Codex (``codex exec``) names its
thread itself (``Capabilities.chooses_session_id``). Such a loop's tracker is armed under a
placeholder id, then moved under the agent's id as soon as the runner learns it: from the
stream's ``SessionStarted``, or from the first Stop forwarded on the loop's own socket,
whichever comes first. The Stop hook finds a tracker by the session id of its input, so
from then on the hook (with or without the runner) and the runner agree on it.
"""

from __future__ import annotations

import os

from ralphctl.hook import paths
from ralphctl.hook.tracker import update_fields


class AdoptionError(ValueError):
    """The agent's session id cannot be taken over; the message says why."""


def move_session(project: str, tracker: str, session_id: str) -> str:
    """Move the session directory of ``tracker`` (tracker, lock, inbox) under
    ``session_id``; returns the tracker's new path. AdoptionError for an unsafe id or a
    directory of that id already there (another loop's)."""
    if not paths.valid_session_id(session_id):
        raise AdoptionError(f"the agent's session id {session_id!r} is not a safe path component")
    target = paths.session_dir(project, session_id)
    if os.path.lexists(target):
        raise AdoptionError(f"{target} is already there: another loop ran in that session")
    os.rename(os.path.dirname(tracker), target)
    moved = os.path.join(target, paths.TRACKER_NAME)
    update_fields(moved, {"session_id": session_id})
    return moved
