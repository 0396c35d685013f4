"""The Copilot homes (``$COPILOT_HOME``) of ralphctl's own that a hook-mode run uses, so that
its ``agentStop`` hook (``copilot_hooks``) never lands in the user's ``~/.copilot``.

- Isolated (``isolate_agent_config``): the run's hook file is added to the isolated home's
  ``hooks`` dir (``copilot.isolated_home``), which holds no hook of the user's.
- Otherwise ``hooked_home``: the user's own home, its folders seen through links (sessions,
  plugins, agents, skills…) and its JSON files (login, settings, MCP servers) copied afresh
  at every run: the CLI rewrites ``config.json`` by replacing it, which would turn a link into
  a file of its own. The ``hooks`` dir is a folder of links to the user's hook files without
  the installed ralphctl one (it would count every stop a second time), plus the run's hook
  file. The CLI's databases (``session-store.db`` and its journal) are not shared: two
  processes must not keep one SQLite journal in two places. Sessions go to the user's
  ``session-state`` (made first if the user has none yet, as the CLI itself would), so
  ``copilot --resume`` finds them. An entry the CLI made here while the user's home lacked it
  stays (a link never replaces it).

Safe to call for every run, from several loops at once: files are replaced atomically and a
link only when it points elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from ralphctl.agents.copilot_hooks import HOOKS_DIR, INSTALLED_FILE, RUN_FILE
from ralphctl.atomic import write_atomic

SESSIONS_DIR = "session-state"


def set_run_hook(home: Path, hook_file: str | None) -> None:
    """Write the run's hook file (``hook_file``, its text) in ``home``'s hooks dir, or remove
    it (None): a run without a stop hook must not keep a former run's."""
    target = home / HOOKS_DIR / RUN_FILE
    if hook_file is None:
        target.unlink(missing_ok=True)
        return
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomic(target, hook_file, mode=0o600)


def hooked_home(root: Path, user_home: Path, hook_file: str) -> Path:
    """Make ``root`` the user's Copilot home (``user_home``) plus the run's hook file, without
    the installed ralphctl hook (see the module docstring); returns ``root``."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    root.chmod(0o700)  # the CLI refuses a home others may write
    user_home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (user_home / SESSIONS_DIR).mkdir(mode=0o700, exist_ok=True)
    for entry in _entries(user_home):
        if entry.name == HOOKS_DIR:
            continue
        if entry.is_dir():
            _link(root / entry.name, entry)
        elif entry.suffix == ".json" and entry.is_file():
            write_atomic(root / entry.name, entry.read_bytes(), mode=0o600)
    hooks = root / HOOKS_DIR
    hooks.mkdir(mode=0o700, exist_ok=True)
    for entry in _entries(user_home / HOOKS_DIR):
        if entry.name not in (INSTALLED_FILE, RUN_FILE):
            _link(hooks / entry.name, entry)
    for folder in (root, hooks):  # a link to what the user removed (never a new link)
        for stale in _entries(folder):
            if stale.is_symlink() and not stale.exists():
                stale.unlink(missing_ok=True)
    set_run_hook(root, hook_file)
    return root


def _entries(directory: Path) -> list[Path]:
    try:
        return list(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def _link(link: Path, target: Path) -> None:
    """Point ``link`` at ``target``, unless the CLI made a real entry there."""
    if link.exists() and not link.is_symlink():
        return
    if link.is_symlink() and os.readlink(link) == str(target):
        return
    temp = link.with_name(f".{link.name}.{os.urandom(4).hex()}.link")
    os.symlink(target, temp)
    os.replace(temp, link)
