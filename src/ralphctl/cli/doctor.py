"""`ralphctl doctor`: one screen answering "will my loop run?"."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from ralphctl.cli.common import console, fail, print_json
from ralphctl.domain.states import EXIT_USAGE

if TYPE_CHECKING:
    from ralphctl.engine.doctor import Check

#: How each status shows.
_MARKS = {
    "ok": "[green]ok[/]",
    "warn": "[yellow]warn[/]",
    "fail": "[red]FAIL[/]",
    "info": "[dim]info[/]",
}


def doctor_command(
    workdir: Path = typer.Option(
        Path("."), "--workdir", "-C", help="The project a loop would run in."
    ),
    agent: str | None = typer.Option(
        None, "--agent", "-a", help="Judge this agent (default: the configured one)."
    ),
    db: str | None = typer.Option(
        None, "--db", help="Database URL or SQLite path (env RALPHCTL_DB)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Will a loop run here? Python, git, the database, a server, each agent's plugin, and each
    agent: found where, version, configured (offline: no API is called), modes.

    Exit code 1 when the configured agent (or --agent) cannot run, with the fix to type.
    """
    from ralphctl.engine.doctor import diagnose

    root = workdir.expanduser().resolve()
    if not root.is_dir():
        fail(f"--workdir {workdir}: not a directory", EXIT_USAGE)
    diagnosis = diagnose(root, db=db, agent=agent, also=[_server()])
    problems = diagnosis.problems
    if json_out:
        print_json(diagnosis.to_json())
        raise typer.Exit(1 if problems else 0)
    from ralphctl.cli.agents import agents_table

    console.print(_checks_table(diagnosis.checks))
    console.print(agents_table(diagnosis.agents))
    chosen = f"{diagnosis.agent} ({diagnosis.agent_from})"
    if not problems:
        console.print(f"[green]ready:[/] a loop of {escape(chosen)} can run here.")
    else:
        console.print(f"[red]not ready:[/] a loop of {escape(chosen)} cannot run here:")
        for problem in problems:
            console.print(f"  [red]-[/] {escape(problem)}")
    configured = diagnosis.configured
    for note in configured.notes() if configured else []:
        console.print(f"[yellow]note:[/] {escape(note)}")
    raise typer.Exit(1 if problems else 0)


def _server() -> Check:
    from ralphctl.engine.doctor import Check
    from ralphctl.server.client import Client

    client = Client.discover()
    if client is None:
        return Check(
            "server", "info", "not running (loops run in the foreground)", "ralphctl serve"
        )
    return Check("server", "ok", f"running at {client.base_url}")


def _checks_table(checks: list[Check]) -> Table:
    table = Table(title="ralphctl doctor", title_justify="left")
    table.add_column("check", style="bold")
    table.add_column("status")
    table.add_column("detail")
    table.add_column("fix", style="dim")
    for check in checks:
        table.add_row(
            check.name, _MARKS[check.status], escape(check.detail), escape(check.fix or "")
        )
    return table
