"""`ralphctl workflow …`: install, list, show and remove workflows.

The registry is imported by each command: workflows validate with pydantic, which costs
`ralphctl run` about 60 ms of start-up if imported with the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from ralphctl.cli.common import console, fail
from ralphctl.domain.states import EXIT_USAGE

if TYPE_CHECKING:
    from ralphctl.workflows.registry import Installed

app = typer.Typer(
    name="workflow",
    help="Install, list, show and remove workflows (prompt templates with loop settings).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

JSON = typer.Option(False, "--json", help="Print JSON.")


@app.command("install")
def install_command(
    path: Path = typer.Argument(..., help="A folder holding workflow.json, or a .json file."),
    force: bool = typer.Option(False, "--force", help="Replace an installed workflow."),
) -> None:
    """Copy a workflow into the registry under its name."""
    from ralphctl.workflows import registry
    from ralphctl.workflows.model import WorkflowError

    try:
        entry = registry.install(path, force=force)
    except WorkflowError as exc:
        fail(str(exc), EXIT_USAGE)
    except OSError as exc:
        fail(f"cannot install {path}: {exc}", EXIT_USAGE)
    console.print(f"Installed workflow [bold]{escape(entry.name)}[/] at {escape(str(entry.path))}")


@app.command("list")
def list_command(json_out: bool = JSON) -> None:
    """Installed workflows, by name."""
    from ralphctl.workflows import registry

    entries = registry.list_installed()
    if json_out:
        console.print_json(json.dumps([_entry_json(entry) for entry in entries]))
        return
    if not entries:
        console.print("No workflows installed. Add one with `ralphctl workflow install PATH`.")
        return
    table = Table(title="workflows", title_justify="left")
    for column in ("name", "description", "loop"):
        table.add_column(column)
    for entry in entries:
        if entry.workflow is None:
            table.add_row(entry.name, f"[red]invalid:[/] {escape(entry.error or '')}", "")
            continue
        loop = entry.workflow.loop
        summary = f"≤ {loop.max_iterations} iterations" if loop.enabled else "single run"
        table.add_row(entry.name, escape(entry.workflow.description), summary)
    console.print(table)


@app.command("show")
def show_command(
    name: str = typer.Argument(..., help="The workflow's name."), json_out: bool = JSON
) -> None:
    """A workflow's prompt template and loop settings (tracker template resolved)."""
    from ralphctl.workflows import registry
    from ralphctl.workflows.model import WorkflowError

    try:
        entry = registry.show(name)
    except WorkflowError as exc:
        fail(str(exc), EXIT_USAGE)
    if json_out:
        console.print_json(json.dumps(_entry_json(entry)))
        return
    assert entry.workflow is not None  # show() raises for entries that do not load
    workflow = entry.workflow
    table = Table(
        show_header=False, title=f"workflow {escape(workflow.name)}", title_justify="left"
    )
    table.add_column(style="bold")
    table.add_column()
    table.add_row("path", escape(str(entry.path)))
    table.add_row("description", escape(workflow.description))
    table.add_row("plugins", escape(", ".join(workflow.plugins)) or "—")
    for key, value in workflow.loop.model_dump(by_alias=True).items():
        if key != "trackerTemplate":
            table.add_row(f"loop.{key}", escape(str(value)))
    console.print(table)
    console.rule("promptTemplate")
    console.out(workflow.prompt_template, highlight=False)
    console.rule("loop.trackerTemplate")
    console.out(workflow.loop.tracker_template, highlight=False)


@app.command("remove")
def remove_command(name: str = typer.Argument(..., help="The workflow's name.")) -> None:
    """Delete an installed workflow."""
    from ralphctl.workflows import registry
    from ralphctl.workflows.model import WorkflowError

    try:
        folder = registry.remove(name)
    except WorkflowError as exc:
        fail(str(exc), EXIT_USAGE)
    except OSError as exc:
        fail(f"cannot remove {name}: {exc}", EXIT_USAGE)
    console.print(f"Removed workflow [bold]{escape(name)}[/] ({escape(str(folder))})")


def _entry_json(entry: Installed) -> dict[str, Any]:
    body = entry.workflow.to_json() if entry.workflow else {"name": entry.name}
    return {**body, "path": str(entry.path), "error": entry.error}
