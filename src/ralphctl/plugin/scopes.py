"""What each scope installs, and where: files by absolute path, settings edits by file.

- ``user``: a local marketplace holding the ``ralphctl`` plugin (Stop hook and commands), made
  known and enabled in Claude Code's user ``settings.json``. Commands are namespaced:
  ``/ralphctl:ralph-loop``, ``/ralphctl:cancel-ralph``, ``/ralphctl:ralph-status``.
- ``project``: the Stop hook in ``<project>/.claude/settings.local.json`` and the commands in
  ``<project>/.claude/commands/`` (``/ralph-loop``, ``/cancel-ralph``, ``/ralph-status``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from ralphctl.plugin import locations
from ralphctl.plugin.layout import (
    COMMANDS,
    MARKETPLACE_NAME,
    PLUGIN_ID,
    PLUGIN_NAME,
    Interpreter,
    command_files,
    plugin_tree,
    stop_hook,
)


class Scope(StrEnum):
    USER = "user"
    PROJECT = "project"


@dataclass(frozen=True, slots=True)
class Wanted:
    """A settings entry to add: ``value`` at ``path``, or appended to the list there."""

    path: tuple[str, ...]
    value: Any
    append: bool = False


@dataclass(frozen=True, slots=True)
class Registration:
    """A marketplace entry in Claude Code's own record (``key`` of the JSON object in
    ``file``), written at install as the CLI writes it when it first loads the marketplace,
    and removed at uninstall while it still names ``source_path``. Claude Code before 2.1.330
    loads a marketplace's commands only from this record, so without it the first session
    after install has none."""

    file: Path
    key: str
    source_path: str


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything one scope installs."""

    scope: Scope
    interpreter: Interpreter
    version: str  # of ralphctl, recorded in the manifest
    manifest: Path
    files: dict[Path, str]
    settings: dict[Path, list[Wanted]]
    commands: tuple[str, ...]  # how a user types them
    registrations: tuple[Registration, ...] = ()
    agent: str = "claude"  # whose CLI reads it (``ralphctl.plugin.targets``)


def user_plan(interpreter: Interpreter, version: str) -> Plan:
    home = locations.marketplace_dir()
    source = {"source": {"source": "directory", "path": str(home)}}
    return Plan(
        scope=Scope.USER,
        interpreter=interpreter,
        version=version,
        manifest=home / locations.MANIFEST_NAME,
        files={
            home / relative: text for relative, text in plugin_tree(interpreter, version).items()
        },
        settings={
            locations.user_settings(): [
                Wanted(("extraKnownMarketplaces", MARKETPLACE_NAME), source),
                Wanted(("enabledPlugins", PLUGIN_ID), True),
            ]
        },
        commands=tuple(f"/{PLUGIN_NAME}:{name}" for name in COMMANDS),
        registrations=(Registration(locations.known_marketplaces(), MARKETPLACE_NAME, str(home)),),
    )


def project_plan(project: Path, interpreter: Interpreter, version: str) -> Plan:
    claude = locations.project_claude_dir(project)
    return Plan(
        scope=Scope.PROJECT,
        interpreter=interpreter,
        version=version,
        manifest=claude / locations.PROJECT_MANIFEST,
        files={
            claude / "commands" / name: text for name, text in command_files(interpreter).items()
        },
        settings={
            claude / "settings.local.json": [
                Wanted(("hooks", "Stop"), stop_hook(interpreter), append=True)
            ]
        },
        commands=tuple(f"/{name}" for name in COMMANDS),
    )
