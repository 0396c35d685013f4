"""Where a project's loop trackers live, and the checks that guard every path we build.

Stdlib only (``os.path``, not ``pathlib``): this runs on every Stop of every session.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeGuard

RALPH_DIR = ".ralph"
SESSIONS_DIR = "sessions"
PENDING_DIR = "pending"
TRACKER_NAME = "loop-tracker.md"
LOCK_NAME = ".lock"
#: The official plugin's state file, relative to the project (Anthropic's ralph-loop).
LEGACY_STATE = os.path.join(".claude", "ralph-loop.local.md")
LEGACY_LOCK = "legacy.lock"
GITIGNORE = "# written by ralphctl: loop state is not part of your project\n*\n"

_MAX_SESSION_ID = 128
_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def valid_session_id(value: object) -> TypeGuard[str]:
    """``^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$``: safe as one path component, never ``..``."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= _MAX_SESSION_ID
        and value[0].isascii()
        and value[0].isalnum()
        and _ID_CHARS.issuperset(value)
    )


def project_dir(env_project: str | None, stdin_cwd: str | None) -> str:
    """``CLAUDE_PROJECT_DIR``, else the Stop input's ``cwd``, else the hook's own cwd.

    The environment comes first because the agent may have ``cd``-ed into a subdirectory.
    """
    for candidate in (env_project, stdin_cwd):
        if candidate and os.path.isdir(candidate):
            return os.path.abspath(candidate)
    return os.getcwd()


def ralph_dir(project: str) -> str:
    """``<project>/.ralph``, created with a ``.gitignore`` so git never tracks it.

    The same contract as ``ralphctl.engine.statefile.ralph_dir``, replicated because the hook
    must not import the engine (and, through it, the store).
    """
    path = os.path.join(project, RALPH_DIR)
    os.makedirs(path, exist_ok=True)
    ignore = os.path.join(path, ".gitignore")
    if not os.path.exists(ignore):
        with open(ignore, "w", encoding="utf-8") as handle:
            handle.write(GITIGNORE)
    return path


def sessions_dir(project: str) -> str:
    return os.path.join(project, RALPH_DIR, SESSIONS_DIR)


def session_dir(project: str, session_id: str) -> str:
    """The directory of one session's tracker; refuses ids that are not safe path components."""
    if not valid_session_id(session_id):
        raise ValueError(f"not a valid session id: {session_id!r}")
    return os.path.join(sessions_dir(project), session_id)


def tracker_path(project: str, session_id: str) -> str:
    return os.path.join(session_dir(project, session_id), TRACKER_NAME)


def pending_dir(project: str) -> str:
    return os.path.join(project, RALPH_DIR, PENDING_DIR)


def legacy_path(project: str) -> str:
    return os.path.join(project, LEGACY_STATE)


def legacy_lock(project: str) -> str:
    return os.path.join(ralph_dir(project), LEGACY_LOCK)


def lock_for(tracker: str) -> str:
    """The lock file guarding a tracker of ours: next to it, so renames never move it."""
    return os.path.join(os.path.dirname(tracker), LOCK_NAME)
