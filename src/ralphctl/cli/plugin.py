"""`ralphctl plugin …`: install, uninstall and inspect the hook and the commands, per agent."""

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
from ralphctl.plugin.scopes import Plan, Scope
from ralphctl.plugin.targets import AGENTS, DEFAULT_AGENT, Target, TargetError, target

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
    help="user: for every project (the agent's user config); project: one project's config.",
)
PROJECT = typer.Option(
    None, "--project", help="The project of --scope project (default: the current directory)."
)
AGENT = typer.Option(
    DEFAULT_AGENT, "--agent", "-a", help=f"The agent CLI to install into: {', '.join(AGENTS)}."
)


@app.command("install")
def install_command(
    agent: str = AGENT, scope: Scope = SCOPE, project: Path | None = PROJECT
) -> None:
    """Install (or refresh) the hook and the commands; run again after moving ralphctl."""
    from ralphctl.plugin.installer import InstallError, install

    chosen = _target(agent)
    plan = _plan(chosen, scope, project)
    other = _plan(chosen, Scope.PROJECT if scope is Scope.USER else Scope.USER, None)
    try:
        install(plan, exclusive_with=[other])
    except (InstallError, OSError) as exc:
        fail(str(exc), EXIT_USAGE)
    console.print(f"Installed ralphctl's {chosen.label} integration ({scope} scope).")
    if plan.commands:
        console.print(f"Commands: {', '.join(plan.commands)}")
    if scope in chosen.notes:
        console.print(escape(chosen.notes[scope]))


@app.command("uninstall")
def uninstall_command(
    agent: str = AGENT, scope: Scope = SCOPE, project: Path | None = PROJECT
) -> None:
    """Remove exactly what `ralphctl plugin install` added."""
    from ralphctl.plugin.installer import InstallError, uninstall

    chosen = _target(agent)
    plan = _plan(chosen, scope, project)
    try:
        removed = uninstall(plan)
    except (InstallError, OSError) as exc:
        fail(str(exc), EXIT_USAGE)
    if removed is None:
        console.print(f"Nothing to uninstall ({scope} scope: no {escape(str(plan.manifest))}).")
    else:
        console.print(f"Uninstalled ralphctl's {chosen.label} integration ({scope} scope).")


@app.command("status")
def status_command(
    agent: str | None = typer.Option(
        None, "--agent", "-a", help="Only this agent (default: every agent)."
    ),
    project: Path | None = PROJECT,
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """What is installed, per agent, for the user and for the project."""
    if agent is not None:
        _target(agent)  # an unknown agent, or one without an installer, is an error here
    found = {name: _statuses(name, project) for name in ([agent] if agent else AGENTS)}
    if json_out:
        entries = [
            entry
            for name, statuses in found.items()
            for entry in (
                [one.to_json() for one in statuses]
                if isinstance(statuses, list)
                else [{"agent": name, "error": statuses}]
            )
        ]
        console.print_json(json.dumps(entries))
        return
    for name, statuses in found.items():
        if isinstance(statuses, str):
            console.print(f"[bold underline]{name}[/]\n  [dim]{escape(statuses)}[/]")
            continue
        label = target(name).label
        console.print(f"[bold underline]{escape(label)}[/]")
        for entry in statuses:
            _print_status(entry, label)


def _statuses(agent: str, project: Path | None) -> list[Status] | str:
    """The agent's user and project status; why there is none, for an agent without an
    installer."""
    from ralphctl.plugin.installer import InstallError
    from ralphctl.plugin.status import status

    try:
        chosen = target(agent)
    except TargetError as exc:
        return str(exc)
    user, here = _plan(chosen, Scope.USER, None), _plan(chosen, Scope.PROJECT, project)
    try:
        return [status(user, here, chosen.trust), status(here, user, chosen.trust)]
    except InstallError as exc:
        fail(str(exc), EXIT_USAGE)


def _target(agent: str) -> Target:
    try:
        return target(agent)
    except TargetError as exc:
        fail(str(exc), EXIT_USAGE)


def _plan(chosen: Target, scope: Scope, project: Path | None) -> Plan:
    if scope is Scope.USER and project is not None:
        fail("--project applies to --scope project only", EXIT_USAGE)
    root = (project or Path.cwd()).expanduser().resolve()
    if scope is Scope.PROJECT and not root.is_dir():
        fail(f"--project {project}: not a directory", EXIT_USAGE)
    return chosen.plan(scope, root, _interpreter(), __version__)


def _interpreter() -> Interpreter:
    try:
        return Interpreter(sys.executable)
    except ValueError as exc:
        fail(str(exc), EXIT_USAGE)


def _print_status(entry: Status, label: str) -> None:
    where = escape(str(entry.manifest.parent))
    if not entry.installed:
        console.print(f"[bold]{entry.scope}[/]: not installed ({where})")
        return
    console.print(f"[bold]{entry.scope}[/]: installed, ralphctl {entry.version} ({where})")
    console.print(f"  interpreter: {escape(str(entry.interpreter))}")
    if entry.commands:
        console.print(f"  commands: {', '.join(entry.commands)}")
    if entry.registered is not None:
        console.print(f"  registered with Claude Code: {'yes' if entry.registered else 'no'}")
    if entry.trust is not None:
        console.print(f"  trusted by {escape(label)}: {entry.trust}")
    for problem in entry.problems:
        console.print(f"  [red]problem:[/] {escape(problem)}")
