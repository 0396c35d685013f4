"""`ralphctl notify …`: send a test notification, list recent deliveries."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from ralphctl.cli.common import console, fail, open_store, print_json
from ralphctl.cli.loop_flags import DB
from ralphctl.domain.states import EXIT_FAILED, EXIT_USAGE

if TYPE_CHECKING:
    from ralphctl.notify.outbox import Notification

app = typer.Typer(
    name="notify",
    help="Notifications: send a test one, list recent deliveries (docs/notifications.md).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

JSON = typer.Option(False, "--json", help="Print JSON.")


@app.command("test")
def send_test_command(
    channel: str | None = typer.Option(
        None, "--channel", help="Only this channel: its key (webhook:URL, command:…, desktop)."
    ),
    workdir: Path | None = typer.Option(
        None, "--workdir", help="Use this project's ralphctl.toml (default: here)."
    ),
    json_out: bool = JSON,
) -> None:
    """Send a test notification to each configured channel now; exit 3 if one fails."""
    from ralphctl.notify.probe import UnknownChannel, chosen_channels, send_test
    from ralphctl.settings import resolve_notify

    settings = resolve_notify(workdir or Path.cwd())
    try:
        channels = chosen_channels(settings, channel)
    except UnknownChannel as exc:
        fail(str(exc), EXIT_USAGE)
    if not channels:
        fail("no notification channel is configured: add [notify] to a settings file", EXIT_USAGE)
    results = send_test(channels)
    if json_out:
        print_json([{"channel": c.key, **outcome.to_json()} for c, outcome in results])
    else:
        for sent, outcome in results:
            mark = "[green]ok[/]" if outcome.ok else "[red]failed[/]"
            detail = escape(outcome.detail)
            console.print(f"{mark} {escape(sent.key)}: {detail} ({outcome.duration_ms} ms)")
    if not all(outcome.ok for _, outcome in results):
        raise typer.Exit(EXIT_FAILED)


@app.command("ls")
def ls_command(
    loop_id: str | None = typer.Option(None, "--loop", help="Only this loop's (id or prefix)."),
    status: str | None = typer.Option(
        None, "--status", help="Only pending, delivered, failed or skipped ones."
    ),
    limit: int = typer.Option(50, "--limit", min=1, max=10_000, help="At most this many."),
    json_out: bool = JSON,
    db: str | None = DB,
) -> None:
    """Recent notifications, newest first, with each delivery's outcome."""
    from ralphctl.notify import outbox

    if status is not None and status not in outbox.STATUSES:
        fail(f"--status must be one of {', '.join(outbox.STATUSES)}, not {status!r}", EXIT_USAGE)
    store = open_store(db)
    try:
        if loop_id is not None:
            loop_id = store.get_loop(loop_id).id
        found = outbox.recent(store, limit=limit, loop_id=loop_id, status=status)
    finally:
        store.close()
    if json_out:
        print_json([notification_json(n) for n in found])
        return
    if not found:
        console.print("No notifications yet.")
        return
    table = Table(title="notifications", title_justify="left")
    for column in ("id", "loop", "event", "channel", "status", "attempts", "last outcome"):
        table.add_column(column)
    for n in found:
        last = n.outcomes[-1]["detail"] if n.outcomes else ""
        table.add_row(
            str(n.id),
            n.loop_id[:8],
            n.event,
            escape(n.channel),
            n.status,
            str(n.attempts),
            escape(last),
        )
    console.print(table)


def notification_json(notification: Notification) -> dict[str, Any]:
    from dataclasses import asdict

    data = asdict(notification)
    for key in ("next_attempt_at", "created_at", "delivered_at"):
        data[key] = data[key] and data[key].isoformat()
    return data
