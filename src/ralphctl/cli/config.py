"""`ralphctl config show`: the resolved configuration and where each value came from."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from ralphctl.cli.common import console, print_json
from ralphctl.settings import PROJECT_FILE, resolve_loop_config, resolve_settings, user_config_path

app = typer.Typer(help="The configuration ralphctl uses.", no_args_is_help=True)


@app.command("show")
def show_command(
    workdir: Path = typer.Option(
        Path("."), "--workdir", "-C", help=f"The project whose {PROJECT_FILE} applies."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Each setting of \\[loops.defaults], \\[loops] and \\[server], and where it came from."""
    root = workdir.expanduser().resolve()
    resolved = resolve_loop_config(root)
    settings = resolve_settings(root)
    sections: dict[str, dict[str, dict[str, Any]]] = {
        "loops.defaults": {
            name: {"value": value, "from": resolved.sources.get(name, "default")}
            for name, value in resolved.config.to_json().items()
        },
    }
    for section, group in (("loops", settings.loops), ("server", settings.server)):
        sections[section] = {
            name: {"value": value, "from": settings.sources[f"{section}.{name}"]}
            for name, value in asdict(group).items()
        }
    files = {"user": str(user_config_path()), "project": str(root / PROJECT_FILE)}
    if json_out:
        print_json({"files": files, **sections})
        return
    for role, path in files.items():
        state = "" if Path(path).is_file() else " (none)"
        console.print(f"[bold]{role} config[/] {escape(path)}{state}")
    for section, values in sections.items():
        table = Table(title=escape(f"[{section}]"), title_justify="left")
        table.add_column("setting")
        table.add_column("value")
        table.add_column("from", style="dim")
        for name, entry in values.items():
            table.add_row(name, escape(json.dumps(entry["value"])), escape(entry["from"]))
        console.print(table)
