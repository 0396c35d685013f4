"""`ralphctl plugin …`: install, uninstall and inspect the Claude Code integration."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from ralphctl import __version__
from ralphctl.cli.common import console, fail
from ralphctl.domain.states import EXIT_USAGE
from ralphctl.plugin.layout import Interpreter
from ralphctl.plugin.scopes import Plan, Scope, project_plan, user_plan

if TYPE_CHECKING:
    from ralphctl.plugin.status import Status

app = typer.Typer(
    name="plugin",
    help="Install the Stop hook and the /ralph-loop, /cancel-ralph, /ralph-status commands.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SCOPE = typer.Option(
    Scope.USER,
    "--scope",
    help="user: a Claude Code plugin for every project; project: one project's .claude/.",
)
PROJECT = typer.Option(
    None, "--project", help="The project of --scope project (default: the current directory)."
)


@app.command("install")
def install_command(scope: Scope = SCOPE, project: Path | None = PROJECT) -> None:
    """Install (or refresh) the hook and the slash commands; run again after moving ralphctl."""
    from ralphctl.plugin.installer import InstallError, install

    plan = _plan(scope, project)
    other = _plan(Scope.PROJECT, None) if scope is Scope.USER else _plan(Scope.USER, None)
    try:
        install(plan, exclusive_with=[other])
    except (InstallError, OSError) as exc:
        fail(str(exc), EXIT_USAGE)
    console.print(f"Installed ralphctl's Claude Code integration ({scope} scope).")
    console.print(f"Commands: {', '.join(plan.commands)}")
    if scope is Scope.USER:
        console.print("Start a new Claude Code session to load the plugin.")
    else:
        console.print(
            "The files in .claude/ name this machine's Python: keep .claude/commands/ralph-*.md"
            " and .claude/ralphctl-install.local.json out of version control."
        )


@app.command("uninstall")
def uninstall_command(scope: Scope = SCOPE, project: Path | None = PROJECT) -> None:
    """Remove exactly what `ralphctl plugin install` added."""
    from ralphctl.plugin.installer import InstallError, uninstall

    plan = _plan(scope, project)
    try:
        removed = uninstall(plan)
    except (InstallError, OSError) as exc:
        fail(str(exc), EXIT_USAGE)
    if removed is None:
        console.print(f"Nothing to uninstall ({scope} scope: no {escape(str(plan.manifest))}).")
    else:
        console.print(f"Uninstalled ralphctl's Claude Code integration ({scope} scope).")


@app.command("status")
def status_command(
    project: Path | None = PROJECT,
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """What is installed, for the user and for the project."""
    from ralphctl.plugin.installer import InstallError
    from ralphctl.plugin.status import status

    try:
        user, here = _plan(Scope.USER, None), _plan(Scope.PROJECT, project)
        found = [status(user, here), status(here, user)]
    except InstallError as exc:
        fail(str(exc), EXIT_USAGE)
    if json_out:
        console.print_json(json.dumps([entry.to_json() for entry in found]))
        return
    for entry in found:
        _print_status(entry)


def _plan(scope: Scope, project: Path | None) -> Plan:
    interpreter = _interpreter()
    if scope is Scope.USER:
        if project is not None:
            fail("--project applies to --scope project only", EXIT_USAGE)
        return user_plan(interpreter, __version__)
    root = (project or Path.cwd()).expanduser().resolve()
    if not root.is_dir():
        fail(f"--project {project}: not a directory", EXIT_USAGE)
    return project_plan(root, interpreter, __version__)


def _interpreter() -> Interpreter:
    try:
        return Interpreter(sys.executable)
    except ValueError as exc:
        fail(str(exc), EXIT_USAGE)


def _print_status(entry: Status) -> None:
    where = escape(str(entry.manifest.parent))
    if not entry.installed:
        console.print(f"[bold]{entry.scope}[/]: not installed ({where})")
        return
    console.print(f"[bold]{entry.scope}[/]: installed, ralphctl {entry.version} ({where})")
    console.print(f"  interpreter: {escape(str(entry.interpreter))}")
    console.print(f"  commands: {', '.join(entry.commands)}")
    if entry.registered is not None:
        console.print(f"  registered with Claude Code: {'yes' if entry.registered else 'no'}")
    for problem in entry.problems:
        console.print(f"  [red]problem:[/] {escape(problem)}")
