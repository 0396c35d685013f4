"""`ralphctl agents …`: the agent CLIs ralphctl drives: list them, locate one, install one.

Installs go into ralphctl's own prefix (docs/agents/install.md), never a global one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from ralphctl.cli.common import console, err_console, fail, print_json
from ralphctl.domain.states import EXIT_FAILED, EXIT_USAGE

if TYPE_CHECKING:
    from ralphctl.agents.health import AgentHealth
    from ralphctl.agents.spec import AgentSpec

app = typer.Typer(
    help="The agent CLIs ralphctl drives: list, locate, install, uninstall.",
    no_args_is_help=True,
)

NAME = typer.Argument(..., help="The agent's name (see `ralphctl agents list`).")
JSON = typer.Option(False, "--json", help="Print JSON.")


@app.command("list")
def list_command(json_out: bool = JSON) -> None:
    """Every agent: what it can do, where its CLI is, its version against the tested one."""
    from ralphctl.agents.health import probe_all
    from ralphctl.agents.registry import all_specs

    found = probe_all(all_specs(), os.environ, Path.home())
    if json_out:
        print_json([health.to_json() for health in found])
        return
    console.print(agents_table(found))


@app.command("path")
def path_command(name: str = NAME) -> None:
    """Print the executable ralphctl would run for the agent."""
    from ralphctl.agents.executables import find_executable
    from ralphctl.agents.install import install_hint

    spec = _spec(name)
    if spec.executable is None or spec.bin_env is None:
        fail(f"the {name} agent runs no CLI of its own", EXIT_FAILED)
    path = find_executable(spec.executable, spec.bin_env)
    if path is None:
        hint = install_hint(name) if spec.package else f"put it on PATH or set ${spec.bin_env}"
        fail(f"`{spec.executable}` not found; {hint}", EXIT_FAILED)
    console.out(path, highlight=False)


@app.command("install")
def install_command(
    name: str = NAME,
    version: str | None = typer.Option(
        None, "--version", help="Install this version, not the one ralphctl is tested with."
    ),
    force: bool = typer.Option(False, "--force", help="Install again even if it is there."),
) -> None:
    """Install the agent's CLI (npm or PyPI) into ralphctl's own prefix, verified."""
    from ralphctl.agents.executables import managed_bin_dir
    from ralphctl.agents.install import InstallError, install, installed_agents

    spec = _spec(name)
    if spec.package is None:
        fail(f"the {name} agent is not installed from a package registry", EXIT_USAGE)
    wanted = version or spec.package.version
    try:
        before = installed_agents().get(name)
        with err_console.status(f"Installing {spec.package.name}@{wanted} …"):
            entry = install(spec, version=version, force=force)
    except InstallError as exc:
        fail(str(exc), EXIT_FAILED)
    if before == entry:
        console.print(f"{name} {entry.version} is installed already ({escape(entry.path)}).")
        return
    link = managed_bin_dir() / entry.executable
    console.print(f"Installed {entry.package} {entry.version} for ralphctl.")
    console.print(f"  {escape(str(link))} -> {escape(str(entry.command))}")
    if spec.bin_env and os.environ.get(spec.bin_env):
        console.print(f"[yellow]note:[/] ${spec.bin_env} is set: ralphctl runs that one instead.")


@app.command("uninstall")
def uninstall_command(name: str = NAME) -> None:
    """Remove what `ralphctl agents install` installed for the agent."""
    from ralphctl.agents.install import InstallError, uninstall

    _spec(name)
    try:
        removed = uninstall(name)
    except InstallError as exc:
        fail(str(exc), EXIT_FAILED)
    if removed is None:
        console.print(f"ralphctl installed nothing for {name}.")
    else:
        console.print(f"Uninstalled {removed.package} {removed.version}.")


def agents_table(found: list[AgentHealth]) -> Table:
    """One row per agent: capabilities, where its CLI is, version, configuration."""
    table = Table(title="agents", title_justify="left")
    table.add_column("agent")
    table.add_column("modes")
    table.add_column("runs")
    table.add_column("cost")
    table.add_column("found", overflow="fold")
    table.add_column("version")
    table.add_column("configured")
    for health in found:
        capabilities = health.spec.capabilities
        runs = [
            name
            for name, able in (
                ("fresh", capabilities.fresh),
                ("same-session", capabilities.same_session),
                ("resume", capabilities.resume),
            )
            if able
        ]
        table.add_row(
            f"{health.name}\n[dim]{escape(health.spec.summary)}[/]",
            ", ".join(sorted(capabilities.permission_modes)) or "-",
            ", ".join(runs),
            "reported" if capabilities.reports_cost else "estimated",
            _found(health),
            _version(health),
            _configured(health),
        )
    return table


def _found(health: AgentHealth) -> str:
    if not health.external:
        return "[dim]no CLI of its own[/]"
    if health.path is None:
        return "[red]not found[/]"
    return f"{escape(health.path)} [dim]({escape(health.source or '')})[/]"


def _version(health: AgentHealth) -> str:
    pinned = health.pinned
    if health.version is None:
        shown = "[dim]-[/]" if health.path is None else f"[yellow]?[/] {health.version_note}"
        return f"{shown} [dim](tested {pinned})[/]" if pinned else shown
    if health.tested_version is False:
        return f"[yellow]{health.version}[/] [dim](tested {pinned})[/]"
    return f"[green]{health.version}[/]" if pinned else health.version


def _configured(health: AgentHealth) -> str:
    if health.configuration is None:
        return "[dim]-[/]"
    colour = "green" if health.configuration.ok else "red"
    return f"[{colour}]{escape(health.configuration.detail)}[/]"


def _spec(name: str) -> AgentSpec:
    from ralphctl.agents.registry import spec_for

    try:
        return spec_for(name)
    except ValueError as exc:
        fail(str(exc), EXIT_USAGE)
