"""Gemini CLI's configuration home, and the isolated one a loop may run it with.

The CLI reads its user settings, extensions, commands, credentials and sessions from
``$GEMINI_CLI_HOME/.gemini`` (``~/.gemini`` without it). ``isolated_home`` prepares a home of
ralphctl's own (``isolate_agent_config``) holding only what reaches the model:

- ``settings.json`` with the user's ``security.auth`` block and nothing else: no hooks, MCP
  servers, extensions, tool or model settings of the user's;
- links to the user's credential files (``CREDENTIAL_FILES``): a Google login, a stored API
  key, the ``.env`` beside the settings.

Environment variables (``GEMINI_API_KEY``, Vertex settings) reach the CLI unchanged; the
workspace's own ``.gemini/`` and the system settings still apply. Sessions run isolated are
kept in the isolated home, so ``--resume`` finds them there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


def isolated_home(root: Path, user_dir: Path) -> Path:
    """Make ``root`` a Gemini CLI home with the user's auth settings and credential links
    only (see the module docstring); returns ``root``, the value for ``GEMINI_CLI_HOME``.

    Safe to call for every run, from several loops at once: the settings file is replaced
    atomically and a link only when it points elsewhere.
    """
    directory = root / CONFIG_DIR
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    auth = auth_settings(user_settings(user_dir))
    settings = {"security": {"auth": auth}} if auth else {}
    write_atomic(directory / SETTINGS, json.dumps(settings, indent=2) + "\n", mode=0o600)
    for name in CREDENTIAL_FILES:
        _link(directory / name, user_dir / name)
    return root


def _link(link: Path, target: Path) -> None:
    """Point ``link`` at ``target`` when it exists; remove a stale link when it does not."""
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
