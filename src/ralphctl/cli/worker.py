"""`ralphctl worker`: run fleet loops on this machine until interrupted (docs/fleet.md)."""

from __future__ import annotations

import asyncio
import logging
import socket
from datetime import timedelta
from pathlib import Path

import typer
from rich.markup import escape

from ralphctl.cli.common import UsageError, err_console
from ralphctl.domain.numbers import parse_duration

DEFAULT_CACHE = Path("~/.cache/ralphctl/fleet")


def worker_command(
    db: str | None = typer.Option(
        None, "--db", help="The fleet's PostgreSQL database (env RALPHCTL_DB)."
    ),
    name: str = typer.Option(
        socket.gethostname(), "--name", help="This worker's name in the fleet (unique)."
    ),
    concurrency: int = typer.Option(1, "--concurrency", min=1, help="Loops run at a time."),
    fleet_limit: int | None = typer.Option(
        None,
        "--fleet-limit",
        min=1,
        envvar="RALPHCTL_FLEET_LIMIT",
        help="Loops run at a time on the whole fleet (give every worker the same).",
    ),
    label: list[str] | None = typer.Option(
        None, "--label", help="A label of this worker, e.g. gpu or agent=codex (repeatable)."
    ),
    cache: Path = typer.Option(
        DEFAULT_CACHE, "--cache", help="Where the loops' clones are kept (one per loop)."
    ),
    lease_ttl: str = typer.Option(
        "30s", "--lease-ttl", help="How long a loop stays held after this worker's last renewal."
    ),
    beat: str = typer.Option("5s", "--heartbeat", help="How often this worker beats."),
    drain: str = typer.Option(
        "10s", "--drain", help="On SIGTERM, how long running loops may finish before suspending."
    ),
) -> None:
    """Run fleet loops: take them from the queue, run them, push each iteration (Ctrl-C
    or SIGTERM: suspend the running loops and release them to other workers)."""
    from ralphctl.fleet.errors import FleetError
    from ralphctl.fleet.workerservice import WorkerOptions, run_worker

    try:
        ttl_s, beat_s, drain_s = map(parse_duration, (lease_ttl, beat, drain))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if beat_s <= 0:
        raise UsageError("--heartbeat must be positive")
    if beat_s * 3 > ttl_s:
        raise UsageError("--lease-ttl must be at least three heartbeats: a lease outlives beats")
    options = WorkerOptions(
        name=name,
        concurrency=concurrency,
        labels=label or [],
        cache=cache.expanduser().absolute(),
        lease_ttl=timedelta(seconds=ttl_s),
        beat_s=beat_s,
        stale_s=beat_s * 4,
        drain_s=max(drain_s, 0.0),
        fleet_limit=fleet_limit,
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("procrastinate").setLevel(logging.WARNING)
    fleet_cap = f", fleet limit {fleet_limit}" if fleet_limit is not None else ""
    err_console.print(
        f"worker [bold]{escape(name)}[/]: {concurrency} slot(s){fleet_cap}, labels"
        f" {escape(', '.join(options.labels) or '(none)')}, cache {escape(str(options.cache))}"
    )
    try:
        asyncio.run(run_worker(db, options))
    except (FleetError, ValueError) as exc:
        raise UsageError(str(exc)) from None
