"""Copilot CLI: ralphctl's ``agentStop`` hook in a hook file of its own (CLI 1.0.102,
``agents.copilot_hooks``).

- ``user``: ``$COPILOT_HOME/hooks/ralphctl.json`` (``~/.copilot`` without it): every project,
  headless runs (``copilot -p``, a piped prompt) included.
- ``project``: ``<project>/.github/hooks/ralphctl.json``; the CLI runs a project's hooks only
  in a folder the user trusted (headless: one trusted before, or ``--trust-folder``).

The manifest stays outside the hooks dirs, whose every ``*.json`` the CLI reads as hooks.
Copilot CLI 1.0.102 has no custom slash commands outside plugins and skills, so no
``/ralph-loop`` is installed. ``ralphctl run --mode hook --agent copilot`` needs no
installation: it brings its own hook for the run (and leaves this one out).
"""

from __future__ import annotations

from pathlib import Path

from ralphctl.agents.copilot_hooks import FORMAT_ARGS, HOOKS_DIR, INSTALLED_FILE, hook_file
from ralphctl.agents.copilot_session import copilot_home
from ralphctl.plugin.layout import HOOK_TIMEOUT_S, Interpreter
from ralphctl.plugin.locations import MANIFEST_NAME, PROJECT_MANIFEST
from ralphctl.plugin.scopes import Plan, Scope

LABEL = "Copilot CLI"
NOTES = {
    Scope.USER: "Start a new Copilot CLI session to load the hook.",
    Scope.PROJECT: (
        "The files in .github/ name this machine's Python: keep .github/hooks/ralphctl.json and"
        " .github/ralphctl-install.local.json out of version control. Copilot CLI runs a"
        " project's hooks only in a folder you trusted."
    ),
}


def plan(scope: Scope, project: Path, interpreter: Interpreter, version: str) -> Plan:
    if scope is Scope.USER:
        directory, manifest = copilot_home(), MANIFEST_NAME
    else:
        directory, manifest = project / ".github", PROJECT_MANIFEST
    text = hook_file(interpreter.hook("stop", *FORMAT_ARGS), HOOK_TIMEOUT_S)
    return Plan(
        scope=scope,
        interpreter=interpreter,
        version=version,
        manifest=directory / manifest,
        files={directory / HOOKS_DIR / INSTALLED_FILE: text},
        settings={},
        commands=(),
        agent="copilot",
    )
