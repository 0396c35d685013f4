"""`ralphctl loops start --repo URL --branch B`: a fleet loop, queued for the workers
(docs/fleet.md). The loop is stored in the PostgreSQL database of `--db` (or RALPHCTL_DB),
never through a local server."""

from __future__ import annotations

import asyncio

from rich.markup import escape

from ralphctl.cli.common import UsageError, console, print_json
from ralphctl.cli.loop_views import loop_json
from ralphctl.engine.starting import InvalidSpec, LoopRequest


def start_in_fleet(
    request: LoopRequest,
    db: str | None,
    repo: str,
    branch: str,
    labels: list[str],
    dry_run: bool,
    json_out: bool,
) -> None:
    """Store the loop pending and queue it; with ``dry_run`` only show its record."""
    from ralphctl.fleet.errors import FleetError
    from ralphctl.fleet.submit import plan_fleet_loop, submit_fleet_loop

    try:
        if dry_run:
            loop = plan_fleet_loop(request, repo, branch)
        else:
            loop = asyncio.run(submit_fleet_loop(db, request, repo, branch, labels))
    except (InvalidSpec, FleetError) as exc:
        raise UsageError(str(exc)) from None
    if json_out:
        print_json(loop_json(loop))
        return
    state = "planned (not stored: --dry-run)" if dry_run else "queued for the fleet (pending)"
    wanted = f" on a worker labelled {', '.join(labels)}" if labels else ""
    console.print(
        f"loop [bold]{loop.id}[/] {state}: {escape(repo)} from {escape(branch)},"
        f" branch ralph/{loop.id}{escape(wanted)}"
    )
