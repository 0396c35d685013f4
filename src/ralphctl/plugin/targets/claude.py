"""Claude Code: a local plugin marketplace at user scope, ``.claude/`` at project scope
(``ralphctl.plugin.scopes``)."""

from __future__ import annotations

from pathlib import Path

from ralphctl.plugin.layout import Interpreter
from ralphctl.plugin.scopes import Plan, Scope, project_plan, user_plan

LABEL = "Claude Code"
NOTES = {
    Scope.USER: "Start a new Claude Code session to load the plugin.",
    Scope.PROJECT: (
        "The files in .claude/ name this machine's Python: keep .claude/commands/ralph-*.md"
        " and .claude/ralphctl-install.local.json out of version control."
    ),
}


def plan(scope: Scope, project: Path, interpreter: Interpreter, version: str) -> Plan:
    if scope is Scope.USER:
        return user_plan(interpreter, version)
    return project_plan(project, interpreter, version)
