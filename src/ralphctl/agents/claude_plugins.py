"""The Claude Code plugins a loop asks for: found among those installed, or a clear error.

A workflow names plugins as ``name@marketplace`` (Claude Code's plugin id) or as a bare
``name`` when one installed plugin has it. Installed means listed in Claude Code's
``plugins/installed_plugins.json`` (both of its formats: ``{"version": 2, "plugins": {id:
[...]}}`` and the older ``{id: {...}}``) or turned on in its user ``settings.json``
(``enabledPlugins``: a plugin registered there is installed by the CLI at its next start),
both under ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``. A run enables them with a ``--settings``
layer ``{"enabledPlugins": {id: true}}`` for that session only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ralphctl.agents.base import AgentUnavailable


class PluginNotInstalled(AgentUnavailable, ValueError):
    """A plugin the loop needs is not installed (or its bare name is ambiguous)."""


def config_dir() -> Path:
    """Claude Code's user directory: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def installed_plugins(directory: Path) -> frozenset[str]:
    """The ids (``name@marketplace``) of the plugins Claude Code has under ``directory``."""
    listed = _json_object(directory / "plugins" / "installed_plugins.json")
    records = listed.get("plugins", listed) if "version" in listed else listed
    enabled = _json_object(directory / "settings.json").get("enabledPlugins")
    ids = [*(records if isinstance(records, Mapping) else ())]
    ids += [key for key, on in (enabled.items() if isinstance(enabled, Mapping) else ()) if on]
    return frozenset(key for key in ids if isinstance(key, str) and "@" in key)


def resolve_plugins(names: Iterable[str], installed: frozenset[str]) -> tuple[str, ...]:
    """The plugin id of each name; PluginNotInstalled naming every one that is missing."""
    ids: list[str] = []
    problems: list[str] = []
    for name in names:
        if "@" in name:
            matches = [name] if name in installed else []
        else:
            matches = sorted(key for key in installed if key.partition("@")[0] == name)
        if len(matches) == 1:
            ids.append(matches[0])
        elif matches:
            problems.append(f"{name} is ambiguous ({', '.join(matches)}): name its marketplace")
        else:
            problems.append(f"{name} is not installed (claude plugin install {name})")
    if problems:
        raise PluginNotInstalled(f"Claude Code plugins: {'; '.join(problems)}")
    return tuple(ids)


def _json_object(path: Path) -> dict[str, object]:
    """The JSON object in ``path``; empty when the file is missing or not a JSON object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
