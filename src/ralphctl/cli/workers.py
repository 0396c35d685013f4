"""`ralphctl workers`: the fleet's workers (docs/fleet.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.table import Table
from rich.text import Text

from ralphctl.cli.common import UsageError, console, print_json

if TYPE_CHECKING:
    from ralphctl.fleet.overview import WorkerView

app = typer.Typer(help="The fleet's workers (fleet mode, PostgreSQL).", no_args_is_help=True)


@app.command("ls")
def list_command(
    db: str | None = typer.Option(
        None, "--db", help="The fleet's PostgreSQL database (env RALPHCTL_DB)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Each worker: alive or not, its labels, loop slots used of its total, the loops it holds;
    then each pending loop that no live worker can run, and what it waits for."""
    from ralphctl.fleet.backbone import open_fleet
    from ralphctl.fleet.errors import FleetError
    from ralphctl.fleet.overview import fleet_overview, waiting_loops

    try:
        engine = open_fleet(db)
    except FleetError as exc:
        raise UsageError(str(exc)) from None
    try:
        with engine.begin() as conn:
            workers = fleet_overview(conn)
            waits = waiting_loops(conn)
    finally:
        engine.dispose()
    if json_out:
        print_json([worker.to_json() for worker in workers])
        return
    if not workers:
        console.print("No workers. Start one with `ralphctl worker --db postgresql://…`.")
    else:
        console.print(_table(workers))
    for loop_id, waiting in waits.items():
        console.print(Text(f"loop {loop_id}: {waiting}", "yellow"))


def _table(workers: list[WorkerView]) -> Table:
    table = Table(title="workers", title_justify="left")
    for column in ("name", "alive", "labels", "slots", "loops"):
        table.add_column(column, overflow="fold")
    for worker in workers:
        table.add_row(
            Text(worker.name),
            Text("yes", style="green") if worker.alive else Text("no", style="red"),
            Text(", ".join(worker.labels) or "-"),
            f"{len(worker.loops)}/{worker.concurrency}",
            Text(", ".join(worker.loops) or "-"),
        )
    return table
