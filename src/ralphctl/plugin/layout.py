"""What ralphctl installs into Claude Code, rendered for one Python interpreter.

Every command runs an absolute interpreter path: no PATH lookup, no ``bash``, ``jq`` or
execute bit. Slash commands run ``<python> -P -m …`` (``-P`` keeps a project folder named
``ralphctl`` from shadowing the package); the Stop hook, which runs on every stop of every
session, takes the fastest start, ``<python> -I -S <…/ralphctl/hook/__main__.py> stop``
(docs/hook-mode.md). Pure: the only inputs besides the arguments are the package's own
command templates and where the package is.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import ralphctl.hook

PLUGIN_NAME = "ralphctl"
MARKETPLACE_NAME = "ralphctl"
PLUGIN_ID = f"{PLUGIN_NAME}@{MARKETPLACE_NAME}"
COMMANDS = ("ralph-loop", "cancel-ralph", "ralph-status")
#: The hook decides in milliseconds; a stuck one must not hold the session for 10 minutes.
HOOK_TIMEOUT_S = 30
DESCRIPTION = (
    "Ralph loops in this session: a Stop hook and /ralph-loop, /cancel-ralph, /ralph-status"
)


def hook_main() -> str:
    """The hook's ``__main__.py`` in this installation of ralphctl."""
    return os.path.join(os.path.dirname(os.path.abspath(ralphctl.hook.__file__)), "__main__.py")


@dataclass(frozen=True, slots=True)
class Interpreter:
    """The absolute Python path every hook and command of the installation runs, and the
    hook's file in the ralphctl it runs."""

    python: str
    hook_file: str = field(default_factory=hook_main)

    def __post_init__(self) -> None:
        if not os.path.isabs(self.python):
            raise ValueError(f"the interpreter path must be absolute: {self.python!r}")

    def module(self, module: str, *args: str) -> str:
        """A shell command line running ``module`` (quoted for ``sh``, spaces included)."""
        return shlex.join([self.python, "-P", "-m", module, *args])

    def hook(self, *args: str) -> str:
        """A shell command line running the hook's file without ``site``, isolated."""
        return shlex.join([self.python, "-I", "-S", self.hook_file, *args])


def stop_hook(interpreter: Interpreter) -> dict[str, Any]:
    """The Stop hook's matcher group, in Claude Code's hooks format."""
    command = interpreter.hook("stop")
    return {"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]}


def command_files(interpreter: Interpreter) -> dict[str, str]:
    """The slash command files, by file name."""
    arm = interpreter.module("ralphctl.plugin.arm")
    cancel = interpreter.module("ralphctl.hook", "cancel")
    status = interpreter.module("ralphctl.hook", "status")
    values = {
        "arm": arm,
        "cancel": cancel,
        "status": status,
        "allow_arm": _allowed(arm),
        "allow_cancel": _allowed(cancel),
        "allow_status": _allowed(status),
        "instructions": loop_instructions(),
    }
    return {f"{name}.md": render(_template(f"{name}.md"), values) for name in COMMANDS}


def loop_instructions() -> str:
    """What ``/ralph-loop`` tells the agent after arming its loop (every agent's command)."""
    return _template("loop-instructions.md").rstrip("\n")


def plugin_tree(interpreter: Interpreter, version: str) -> dict[str, str]:
    """A local marketplace holding the plugin, by path relative to the marketplace root."""
    plugin = {
        "name": PLUGIN_NAME,
        "version": version,
        "description": DESCRIPTION,
        "author": {"name": "ralphctl"},
    }
    marketplace = {
        "name": MARKETPLACE_NAME,
        "owner": {"name": "ralphctl"},
        "description": "The Claude Code plugin of this machine's ralphctl installation",
        "plugins": [{**plugin, "source": f"./{PLUGIN_NAME}"}],
    }
    hooks = {"hooks": {"Stop": [stop_hook(interpreter)]}}
    tree = {
        ".claude-plugin/marketplace.json": _json(marketplace),
        f"{PLUGIN_NAME}/.claude-plugin/plugin.json": _json(plugin),
        f"{PLUGIN_NAME}/hooks/hooks.json": _json(hooks),
    }
    for name, text in command_files(interpreter).items():
        tree[f"{PLUGIN_NAME}/commands/{name}"] = text
    return tree


def render(template: str, values: Mapping[str, str]) -> str:
    """Replace every ``{{key}}``; a placeholder without a value is a bug, not a blank."""
    for key, value in values.items():
        template = template.replace("{{" + key + "}}", value)
    if "{{" in template:
        raise ValueError(f"unfilled placeholder in: {template[template.index('{{') :][:40]!r}")
    return template


def _allowed(command: str) -> str:
    """``allowed-tools`` for a ``!`` block running ``command`` with anything after it, as a
    YAML flow list of one JSON string (safe whatever the path contains)."""
    return json.dumps([f"Bash({command}:*)"])


def _template(name: str) -> str:
    return (resources.files("ralphctl.plugin") / "assets" / name).read_text(encoding="utf-8")


def _json(data: object) -> str:
    return json.dumps(data, indent=2) + "\n"
