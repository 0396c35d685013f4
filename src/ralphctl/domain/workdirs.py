"""Which directories a loop may work in: never one a user would not mean as a project.

A loop writes ``.ralph/`` into its work dir and lets an agent edit it unattended, so these are
refused, both as given and once symlinks are resolved (a link to ``/`` is ``/``):

- the filesystem root, and the home directory itself (a project lives below it);
- anything inside the kernel's virtual filesystems, ``/proc``, ``/sys`` and ``/dev``
  (``/proc/self/cwd`` is a different directory for every process that reads it);
- the top-level system directories themselves (``/etc``, ``/usr``, ``/var``, ``/bin``…); a
  project below one of them (``/usr/src/app``, ``/opt/tool``) is fine.

Pure: the caller resolves the path (``os.path.realpath``) and names the home directory.
"""

from __future__ import annotations

import posixpath

#: Nothing inside these is a project: the kernel's views of processes, devices and itself.
VIRTUAL_TREES = ("/proc", "/sys", "/dev")
#: These directories themselves are not projects (directories below them may be).
SYSTEM_DIRS = frozenset(
    {
        "/",
        "/bin",
        "/boot",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/media",
        "/mnt",
        "/opt",
        "/root",
        "/run",
        "/sbin",
        "/srv",
        "/usr",
        "/usr/bin",
        "/usr/lib",
        "/usr/local",
        "/usr/sbin",
        "/usr/share",
        "/var",
    }
)


def workdir_refusal(given: str, resolved: str, home: str | None) -> str | None:
    """Why ``given`` (absolute; ``resolved`` is its real path) cannot be a loop's work dir, or
    None when it can. ``home``: the user's home directory, if known."""
    for path in dict.fromkeys((posixpath.normpath(given), posixpath.normpath(resolved))):
        reason = _refusal(path, home and posixpath.normpath(home))
        if reason is not None:
            shown = given if path == posixpath.normpath(given) else f"{given} (really {path})"
            return f"{shown} cannot be a loop's work dir: {reason}; use a project directory"
    return None


def _refusal(path: str, home: str | None) -> str | None:
    if not path.startswith("/"):
        return "it is not an absolute path"
    if path.startswith("//"):  # POSIX leaves a leading // to the system: treat it as /
        path = "/" + path.lstrip("/")
    for tree in VIRTUAL_TREES:
        if path == tree or path.startswith(tree + "/"):
            return f"it is inside {tree}, a virtual filesystem of the kernel"
    if path == "/":
        return "it is the filesystem root"
    if path in SYSTEM_DIRS:
        return "it is a system directory"
    if home is not None and path == home:
        return "it is the home directory itself"
    return None
