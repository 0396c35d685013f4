"""OpenCode: ralphctl's plugin (``plugins/ralphctl.js``) and the ``/ralph-loop``,
``/cancel-ralph``, ``/ralph-status`` custom commands (``commands/*.md``), CLI 1.18.33.

- ``user``: ``$XDG_CONFIG_HOME/opencode`` (``~/.config/opencode`` without it): every project.
- ``project``: ``<project>/.opencode``.

OpenCode loads every ``{plugin,plugins}/*.{ts,js}`` and ``{command,commands}/**/*.md`` of
those folders at start (checked in the 1.18.33 binary). It has no Stop hook: the plugin asks
ralphctl's hook for the decision at ``session.idle`` and prompts the session with the reason
(``assets/opencode/ralphctl.js``). A command's ``!`…``` block runs in a shell when the command
is used, after ``$ARGUMENTS`` was pasted into it; the arguments reach ``ralphctl.plugin.arm``
through a quoted heredoc, as for Claude Code (a backtick in them ends the block early).
"""

from __future__ import annotations

import json
import os
import shlex
from importlib import resources
from pathlib import Path

from ralphctl.plugin.layout import COMMANDS, HOOK_TIMEOUT_S, Interpreter, loop_instructions, render
from ralphctl.plugin.locations import MANIFEST_NAME, PROJECT_MANIFEST
from ralphctl.plugin.scopes import Plan, Scope

LABEL = "OpenCode"
PLUGIN_FILE = "ralphctl.js"
FORMAT_ARGS = ("--format", "opencode")
_END = "RALPHCTL_ARGUMENTS_END"  # of the heredoc carrying $ARGUMENTS
NOTES = {
    Scope.USER: "Start a new OpenCode session to load the plugin and the commands.",
    Scope.PROJECT: (
        "The files in .opencode/ name this machine's Python: keep .opencode/plugins/ralphctl.js,"
        " .opencode/commands/ralph-*.md and .opencode/ralphctl-install.local.json out of"
        " version control."
    ),
}


def plan(scope: Scope, project: Path, interpreter: Interpreter, version: str) -> Plan:
    if scope is Scope.USER:
        directory, manifest = config_dir(), MANIFEST_NAME
    else:
        directory, manifest = project / ".opencode", PROJECT_MANIFEST
    files = {directory / "plugins" / PLUGIN_FILE: plugin_file(interpreter)}
    files |= {
        directory / "commands" / name: text for name, text in command_files(interpreter).items()
    }
    return Plan(
        scope=scope,
        interpreter=interpreter,
        version=version,
        manifest=directory / manifest,
        files=files,
        settings={},
        commands=tuple(f"/{name}" for name in COMMANDS),
        agent="opencode",
    )


def config_dir() -> Path:
    """OpenCode's global config folder: ``$XDG_CONFIG_HOME/opencode``, else ``~/.config/…``."""
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path.home() / ".config") / "opencode"


def plugin_file(interpreter: Interpreter) -> str:
    """The plugin, running the hook of ``interpreter`` (its argv, no shell)."""
    argv = shlex.split(interpreter.hook("stop", *FORMAT_ARGS))
    values = {"hook_argv": json.dumps(argv), "timeout_ms": str(HOOK_TIMEOUT_S * 1000)}
    return render(_asset(PLUGIN_FILE), values)


def command_files(interpreter: Interpreter) -> dict[str, str]:
    """The custom command files, by file name."""
    arm = interpreter.module("ralphctl.plugin.arm")
    cancel = interpreter.module("ralphctl.hook", "cancel")
    status = interpreter.module("ralphctl.hook", "status")
    commands = {
        "ralph-loop": (
            "Start a Ralph loop in this session (ralphctl)",
            f"!`{arm} <<'{_END}'\n$ARGUMENTS\n{_END}\n`\n\n{loop_instructions()}",
        ),
        "cancel-ralph": (
            "Cancel the Ralph loop of this session (ralphctl)",
            f"!`{cancel}`\n\nTell the user the result of the command above, exactly as it was"
            " printed, and do nothing else.",
        ),
        "ralph-status": (
            "Show the state of the Ralph loop of this session (ralphctl)",
            f"!`{status}`\n\nShow the user the state printed above, exactly as it was printed,"
            " and do nothing else.",
        ),
    }
    return {
        f"{name}.md": f"---\ndescription: {json.dumps(description)}\n---\n{prompt}\n"
        for name, (description, prompt) in commands.items()
    }


def _asset(name: str) -> str:
    folder = resources.files("ralphctl.plugin") / "assets" / "opencode"
    return (folder / name).read_text(encoding="utf-8")
