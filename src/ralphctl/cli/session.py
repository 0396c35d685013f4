"""`ralphctl cancel` and `ralphctl sessions`: the same-session (Stop hook) loops of a project."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ralphctl.cli.common import console, print_json
from ralphctl.hook import control
from ralphctl.hook.record import MODE_ENV, dispatch

PROJECT = typer.Option(
    Path("."), "--project", "-C", help="The project whose loops these are (default: .)."
)


def cancel_command(
    session: str | None = typer.Option(
        None, "--session", help="The Claude Code session id (default: the only active loop)."
    ),
    project: Path = PROJECT,
) -> None:
    """Deactivate a same-session loop and report the iteration it reached."""
    result = control.cancel(str(project.resolve()), session)
    console.print(escape(result.message))
    if result.record is not None:
        dispatch(result.record, os.environ.get(MODE_ENV))
    if result.loop is None:
        raise typer.Exit(1)


def sessions_command(
    project: Path = PROJECT,
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Same-session loop trackers of a project, with their state."""
    root = project.resolve()
    loops = control.list_loops(str(root))
    if json_out:
        print_json([info.to_json() for info in loops])
        return
    if not loops:
        console.print(f"No Ralph loop trackers in {escape(str(root))}.")
        return
    table = Table(title=f"same-session loops · {root}", title_justify="left")
    for column in ("session", "state", "iter", "completes on", "last decision", "cap overrides"):
        table.add_column(column, no_wrap=True)
    table.add_column("task · tracker", overflow="fold", min_width=20)
    for info in loops:
        table.add_row(
            info.session_id or info.kind,
            _state(info),
            f"{info.iteration if info.iteration is not None else '?'}/{info.max_iterations or '∞'}",
            Text(info.completion_marker or ""),  # the tracker's text is never markup
            f"{info.last_decision or ''} {info.last_decision_at or ''}".strip(),
            str(info.cap_overrides or ""),
            Text(f"{(info.task or '').partition(chr(10))[0][:80]} · {info.path}"),
        )
    console.print(table)


def _state(info: control.LoopInfo) -> Text:
    if info.problem:
        return Text(f"unreadable: {info.problem}", "bold red")
    if info.active:
        return Text("active" if info.kind != "pending" else "pending", "bold cyan")
    if info.paused:
        return Text("paused", "yellow")
    return Text(info.ended, "green")
