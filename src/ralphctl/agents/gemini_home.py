"""Gemini CLI's configuration home, and the homes of ralphctl's own a loop may run it with.

The CLI reads its user settings, extensions, commands, credentials and sessions from
``$GEMINI_CLI_HOME/.gemini`` (``~/.gemini`` without it). ``isolated_home`` prepares a home of
ralphctl's own (``isolate_agent_config``) holding only what reaches the model:

- ``settings.json`` with the user's ``security.auth`` block and nothing else: no hooks, MCP
  servers, extensions, tool or model settings of the user's;
- links to the user's credential files (``CREDENTIAL_FILES``): a Google login, a stored API
  key, the ``.env`` beside the settings.

Environment variables (``GEMINI_API_KEY``, Vertex settings) reach the CLI unchanged; the
workspace's own ``.gemini/`` (in a folder trusted before the CLI starts) and the system
settings still apply. Sessions run isolated are
kept in the isolated home, so ``--resume`` finds them there.

A hook-mode run adds its ``AfterAgent`` hook (``gemini_hooks``) to the settings of the home it
runs with, never to the user's files: to the isolated home's, or to ``hooked_home``, the
user's own home seen through links (every entry of the user's config dir linked, the settings
a copy with the hook added; sessions, logins, extensions and commands are the user's). A
settings layer of the run's own is not possible: the system settings files the CLI takes from
the environment (``GEMINI_CLI_SYSTEM_SETTINGS_PATH``, ``…_DEFAULTS_PATH``) are skipped unless
root owns them and every folder above them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ralphctl.agents.gemini_hooks import with_run_hook
from ralphctl.atomic import write_atomic

HOME_ENV = "GEMINI_CLI_HOME"
CONFIG_DIR = ".gemini"
SETTINGS = "settings.json"
#: Files of the user's config dir that hold credentials (linked into an isolated home).
CREDENTIAL_FILES = ("oauth_creds.json", "google_accounts.json", "gemini-credentials.json", ".env")


def config_dir(env: Mapping[str, str], home: Path) -> Path:
    """The user's Gemini CLI config dir: ``$GEMINI_CLI_HOME/.gemini``, else ``~/.gemini``."""
    root = Path(env[HOME_ENV]) if env.get(HOME_ENV) else home
    return root / CONFIG_DIR


def user_settings(directory: Path) -> dict[str, Any]:
    """The user's ``settings.json`` (empty when missing or not a JSON object)."""
    try:
        settings = json.loads((directory / SETTINGS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return settings if isinstance(settings, dict) else {}


def auth_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The ``security.auth`` block of some settings (empty when absent)."""
    security = settings.get("security")
    auth = security.get("auth") if isinstance(security, dict) else None
    return dict(auth) if isinstance(auth, dict) else {}


def isolated_home(root: Path, user_dir: Path, hook: Mapping[str, Any] | None = None) -> Path:
    """Make ``root`` a Gemini CLI home with the user's auth settings and credential links
    only (see the module docstring), and ``hook``'s group if given; returns ``root``, the
    value for ``GEMINI_CLI_HOME``.

    Safe to call for every run, from several loops at once: the settings file is replaced
    atomically and a link only when it points elsewhere.
    """
    directory = root / CONFIG_DIR
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    auth = auth_settings(user_settings(user_dir))
    settings: dict[str, Any] = {"security": {"auth": auth}} if auth else {}
    _write_settings(directory, with_run_hook(settings, hook) if hook else settings)
    for name in CREDENTIAL_FILES:
        _link(directory / name, user_dir / name)
    return root


def hooked_home(root: Path, user_dir: Path, hook: Mapping[str, Any]) -> Path:
    """Make ``root`` the user's own Gemini CLI home with ``hook``'s group added to its
    settings (see the module docstring); returns ``root``. ValueError when the user's
    settings are not a JSON object (a copy must keep every one of them).

    Safe to call for every run, from several loops at once, like ``isolated_home``; an entry
    the CLI made here while the user's config dir lacked it stays (a link cannot replace it).
    """
    directory = root / CONFIG_DIR
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write_settings(directory, with_run_hook(_settings_to_copy(user_dir / SETTINGS), hook))
    names = {entry.name for entry in _entries(user_dir)} - {SETTINGS}
    for name in names:
        _link(directory / name, user_dir / name)
    for stale in _entries(directory):  # a link to what the user removed (never a new link)
        if stale.is_symlink() and not stale.exists():
            stale.unlink(missing_ok=True)
    return root


def _settings_to_copy(file: Path) -> dict[str, Any]:
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ValueError(f"{file}: cannot read it ({exc.strerror})") from None
    try:
        settings = json.loads(text)
    except ValueError:
        settings = None
    if not isinstance(settings, dict):
        raise ValueError(
            f"{file} is not a plain JSON object (comments?): ralphctl copies it to add its "
            "hook for the run; make it plain JSON, or set isolate_agent_config = true"
        )
    return settings


def _entries(directory: Path) -> list[Path]:
    try:
        return list(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def _write_settings(directory: Path, settings: Mapping[str, Any]) -> None:
    write_atomic(directory / SETTINGS, json.dumps(settings, indent=2) + "\n", mode=0o600)


def _link(link: Path, target: Path) -> None:
    """Point ``link`` at ``target`` when it exists; remove a stale link when it does not."""
    if link.exists() and not link.is_symlink():
        return  # the CLI's own, made before the user had one
    current = os.readlink(link) if link.is_symlink() else None
    if not target.exists():
        if current is not None:
            link.unlink(missing_ok=True)
        return
    if current == str(target):
        return
    temp = link.with_name(f".{link.name}.{os.urandom(4).hex()}.link")
    os.symlink(target, temp)
    os.replace(temp, link)
