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

#: ``stat.S_IFMT`` and ``stat.S_IFDIR``, without importing ``stat`` on the hook's path.
_FORMAT_BITS = 0o170000
_DIRECTORY = 0o040000
_MAX_SESSION_ID = 128
_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


class UnsafeDirectory(OSError):
    """A directory ralphctl would use is a symlink, not a directory, or no place for a loop:
    it is never followed nor written to."""


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
    """``CLAUDE_PROJECT_DIR`` (or the agent's own variable), else the Stop input's ``cwd``,
    else the hook's own cwd.

    The environment comes first because the agent may have ``cd``-ed into a subdirectory.
    UnsafeDirectory if it is no place for a loop (``domain.workdirs``): the hook then
    writes nothing there, not even its log.
    """
    return check_project(unchecked_project_dir(env_project, stdin_cwd))


def unchecked_project_dir(env_project: str | None, stdin_cwd: str | None) -> str:
    """The directory ``project_dir`` checks: only to read from (a cheap pre-check)."""
    for candidate in (env_project, stdin_cwd):
        if candidate and os.path.isdir(candidate):
            return os.path.abspath(candidate)
    return os.getcwd()


def check_project(project: str) -> str:
    """``project`` if a loop may live there, else UnsafeDirectory saying why."""
    from ralphctl.domain.workdirs import workdir_refusal  # not on the no-loop path

    if not os.path.isdir(project):
        raise UnsafeDirectory(f"{project} is not a directory")
    given = os.path.abspath(project)
    refusal = workdir_refusal(given, os.path.realpath(given), os.environ.get("HOME"))
    if refusal is not None:
        raise UnsafeDirectory(refusal)
    return project


def checked(project: str, *names: str) -> str:
    """``project/names…``, refusing (UnsafeDirectory) an existing component that is a symlink
    or not a directory: a symlinked ``.ralph`` or ``sessions`` would lead reads and writes
    out of the project. Components that do not exist yet are fine."""
    path = project
    for index, name in enumerate(names):
        path = os.path.join(path, name)
        try:
            mode = os.lstat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return os.path.join(path, *names[index + 1 :])
        if mode & _FORMAT_BITS != _DIRECTORY:
            raise UnsafeDirectory(f"{path} is a symlink or not a directory: not followed")
    return path


def make_dirs(project: str, *names: str) -> str:
    """Create ``project/names…`` one real directory at a time (never through a symlink)."""
    path = project
    for name in names:
        path = os.path.join(path, name)
        try:
            os.mkdir(path, 0o755)
        except FileExistsError:
            pass
        checked(os.path.dirname(path), name)
    return path


def ralph_dir(project: str) -> str:
    """``<project>/.ralph``, created with a ``.gitignore`` so git never tracks it.

    The same contract as ``ralphctl.engine.statefile.ralph_dir``, replicated because the hook
    must not import the engine (and, through it, the store).
    """
    path = make_dirs(project, RALPH_DIR)
    ignore = os.path.join(path, ".gitignore")
    try:  # O_EXCL | O_NOFOLLOW: a dangling symlink named .gitignore is never written through
        fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        return path
    try:
        os.write(fd, GITIGNORE.encode())
    finally:
        os.close(fd)
    return path


def existing_ralph_dir(project: str) -> str | None:
    """``<project>/.ralph`` if it already is a real directory (never created here)."""
    path = os.path.join(project, RALPH_DIR)
    try:
        return path if os.lstat(path).st_mode & _FORMAT_BITS == _DIRECTORY else None
    except OSError:
        return None


def sessions_dir(project: str) -> str:
    return checked(project, RALPH_DIR, SESSIONS_DIR)


def session_dir(project: str, session_id: str) -> str:
    """The directory of one session's tracker; refuses ids that are not safe path components."""
    if not valid_session_id(session_id):
        raise ValueError(f"not a valid session id: {session_id!r}")
    return checked(project, RALPH_DIR, SESSIONS_DIR, session_id)


def make_session_dir(project: str, session_id: str) -> str:
    session_dir(project, session_id)  # validates the id
    ralph_dir(project)
    return make_dirs(project, RALPH_DIR, SESSIONS_DIR, session_id)


def tracker_path(project: str, session_id: str) -> str:
    return os.path.join(session_dir(project, session_id), TRACKER_NAME)


def pending_dir(project: str) -> str:
    return checked(project, RALPH_DIR, PENDING_DIR)


def make_pending_dir(project: str) -> str:
    ralph_dir(project)
    return make_dirs(project, RALPH_DIR, PENDING_DIR)


def legacy_path(project: str) -> str:
    return os.path.join(project, LEGACY_STATE)


def legacy_lock(project: str) -> str:
    return os.path.join(ralph_dir(project), LEGACY_LOCK)


def lock_for(tracker: str) -> str:
    """The lock file guarding a tracker of ours: next to it, so renames never move it."""
    return os.path.join(os.path.dirname(tracker), LOCK_NAME)
