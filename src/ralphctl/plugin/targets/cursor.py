"""Cursor: ralphctl's ``stop`` hook in a ``hooks.json`` and the ``/ralph-loop``,
``/cancel-ralph``, ``/ralph-status`` custom commands (``commands/*.md``).

- ``user``: ``~/.cursor/hooks.json`` and ``~/.cursor/commands/``: every project.
- ``project``: ``<project>/.cursor/hooks.json`` and ``<project>/.cursor/commands/``; Cursor
  runs a project's hooks only in a trusted workspace.

From Cursor's hooks documentation (no Cursor build runs here: it is not on a registry):
``hooks.json`` is ``{"version": 1, "hooks": {"stop": [{"command", "timeout" (seconds),
"loop_limit"}]}}``. ``stop`` answers ``{"followup_message": …}``, which Cursor sends as the
next user message; it sends none once ``loop_count`` (the follow-ups already sent in the
conversation, by every loop in it) reaches ``loop_limit`` (5 when absent, ``null`` for no
cap). The installer writes ``LOOP_LIMIT`` there and passes the same number to the hook, so
the loop's own bound ends it first, and a loop Cursor does end is recorded as such.

A command is a Markdown prompt with no shell step of its own, sent with the text typed after
it: the prompt asks the agent to run the command through its shell tool, the user's text
in a quoted heredoc (as ``/ralph-loop`` does for Claude Code).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ralphctl.plugin.layout import COMMANDS, HOOK_TIMEOUT_S, Interpreter, loop_instructions
from ralphctl.plugin.locations import MANIFEST_NAME, PROJECT_MANIFEST
from ralphctl.plugin.scopes import Plan, Scope, Wanted

LABEL = "Cursor"
HOOKS_FILE = "hooks.json"
EVENT = "stop"
HOOKS_VERSION = 1
#: Cursor's ``loop_limit`` and the hook's ``--loop-limit``: far above a loop's iterations
#: (100 by default), so the loop's bound wins unless one conversation runs that many.
LOOP_LIMIT = 1000
FORMAT_ARGS = ("--format", "cursor", "--loop-limit", str(LOOP_LIMIT))
ARGUMENTS_END = "RALPHCTL_ARGUMENTS_END"
NOTES = {
    Scope.USER: "Start a new Cursor chat (or `cursor-agent` session) to load the hook and the"
    " commands.",
    Scope.PROJECT: (
        "The files in .cursor/ name this machine's Python: keep .cursor/hooks.json,"
        " .cursor/commands/ralph-*.md and .cursor/ralphctl-install.local.json out of version"
        " control. Cursor runs a project's hooks only in a trusted workspace, and also runs"
        " Claude Code's project hooks when third-party configs are on: do not install ralphctl"
        " for Claude Code at project scope in the same project."
    ),
}


def plan(scope: Scope, project: Path, interpreter: Interpreter, version: str) -> Plan:
    if scope is Scope.USER:
        directory, manifest = Path.home() / ".cursor", MANIFEST_NAME
    else:
        directory, manifest = project / ".cursor", PROJECT_MANIFEST
    return Plan(
        scope=scope,
        interpreter=interpreter,
        version=version,
        manifest=directory / manifest,
        files={
            directory / "commands" / name: text for name, text in command_files(interpreter).items()
        },
        settings={
            directory / HOOKS_FILE: [
                Wanted(("version",), HOOKS_VERSION),
                Wanted(("hooks", EVENT), stop_hook(interpreter), append=True),
            ]
        },
        commands=tuple(f"/{name}" for name in COMMANDS),
        agent="cursor",
    )


def stop_hook(interpreter: Interpreter) -> dict[str, Any]:
    """The ``hooks.stop`` entry: the hook in Cursor's format, with Cursor's cap repeated."""
    return {
        "command": interpreter.hook("stop", *FORMAT_ARGS),
        "timeout": HOOK_TIMEOUT_S,
        "loop_limit": LOOP_LIMIT,
    }


def command_files(interpreter: Interpreter) -> dict[str, str]:
    """The custom command files, by file name."""
    arm = interpreter.module("ralphctl.plugin.arm")
    cancel = interpreter.module("ralphctl.hook", "cancel")
    status = interpreter.module("ralphctl.hook", "status")
    loop = (
        "# Start a Ralph loop in this chat (ralphctl)\n\n"
        "Run this shell command once, with the line `ARGUMENTS` replaced by the text the user"
        " typed after /ralph-loop, exactly as typed (add no quotes or escapes: the quoted"
        " heredoc passes it as it is):\n\n"
        f"```sh\n{arm} <<'{ARGUMENTS_END}'\nARGUMENTS\n{ARGUMENTS_END}\n```\n\n"
        f"Once it has run:\n\n{loop_instructions()}\n"
    )
    return {
        "ralph-loop.md": loop,
        "cancel-ralph.md": _relay("Cancel the Ralph loop of this chat (ralphctl)", cancel),
        "ralph-status.md": _relay("Show the Ralph loop of this chat (ralphctl)", status),
    }


def _relay(title: str, command: str) -> str:
    """A command that runs ``command`` and shows its output as printed."""
    return (
        f"# {title}\n\nRun this shell command once:\n\n```sh\n{command}\n```\n\n"
        "Then show the user its output exactly as it was printed, and do nothing else.\n"
    )
