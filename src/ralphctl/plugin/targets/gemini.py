"""Gemini CLI: ralphctl's ``AfterAgent`` hook in a ``settings.json`` and the ``/ralph-loop``,
``/cancel-ralph``, ``/ralph-status`` custom commands (``commands/*.toml``).

- ``user``: ``$GEMINI_CLI_HOME/.gemini`` (``~/.gemini`` without it): every project.
- ``project``: ``<project>/.gemini``; the CLI runs a project's hooks in trusted folders only
  and warns once about a project hook it has not seen before.

A command's ``!{…}`` block runs a shell command (the CLI asks to confirm it) and puts its
output in the prompt; ``{{args}}`` inside it is shell-quoted into one word, which
``ralphctl.plugin.arm --text`` splits as ``/ralph-loop`` does for Claude Code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ralphctl.agents.gemini_home import SETTINGS, config_dir
from ralphctl.agents.gemini_hooks import EVENT, FORMAT_ARGS, INSTALLED_HOOK_NAME, hook_group
from ralphctl.plugin.layout import COMMANDS, HOOK_TIMEOUT_S, Interpreter, loop_instructions
from ralphctl.plugin.locations import MANIFEST_NAME, PROJECT_MANIFEST
from ralphctl.plugin.scopes import Plan, Scope, Wanted

LABEL = "Gemini CLI"
NOTES = {
    Scope.USER: "Start a new Gemini CLI session to load the hook and the commands.",
    Scope.PROJECT: (
        "The files in .gemini/ name this machine's Python: keep .gemini/commands/ralph-*.toml"
        " and .gemini/ralphctl-install.local.json out of version control. Gemini CLI runs a"
        " project's hooks only in a trusted folder."
    ),
}


def plan(scope: Scope, project: Path, interpreter: Interpreter, version: str) -> Plan:
    if scope is Scope.USER:
        directory, manifest = config_dir(os.environ, Path.home()), MANIFEST_NAME
    else:
        directory, manifest = project / ".gemini", PROJECT_MANIFEST
    command = interpreter.hook("stop", *FORMAT_ARGS)
    group = hook_group(INSTALLED_HOOK_NAME, command, HOOK_TIMEOUT_S)
    return Plan(
        scope=scope,
        interpreter=interpreter,
        version=version,
        manifest=directory / manifest,
        files={
            directory / "commands" / name: text for name, text in command_files(interpreter).items()
        },
        settings={directory / SETTINGS: [Wanted(("hooks", EVENT), group, append=True)]},
        commands=tuple(f"/{name}" for name in COMMANDS),
        agent="gemini",
    )


def command_files(interpreter: Interpreter) -> dict[str, str]:
    """The custom command files, by file name."""
    arm = interpreter.module("ralphctl.plugin.arm", "--text")
    cancel = interpreter.module("ralphctl.hook", "cancel")
    status = interpreter.module("ralphctl.hook", "status")
    prompts = {
        "ralph-loop": (
            "Start a Ralph loop in this session (ralphctl)",
            f"!{{{arm} {{{{args}}}}}}\n\n{loop_instructions()}\n",
        ),
        "cancel-ralph": (
            "Cancel the Ralph loop of this session (ralphctl)",
            f"!{{{cancel}}}\n\nTell the user the result of the command above, exactly as it"
            " was printed, and do nothing else.\n",
        ),
        "ralph-status": (
            "Show the state of the Ralph loop of this session (ralphctl)",
            f"!{{{status}}}\n\nShow the user the state printed above, exactly as it was"
            " printed, and do nothing else.\n",
        ),
    }
    return {f"{name}.toml": _toml(*prompts[name]) for name in COMMANDS}


def _toml(description: str, prompt: str) -> str:
    """A command file: TOML basic strings are JSON strings (non-ASCII kept as is)."""
    return f"description = {_string(description)}\nprompt = {_string(prompt)}\n"


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
