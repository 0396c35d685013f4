"""`ralphctl status` and `ralphctl history`: what the loops on this machine did."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table
from rich.text import Text

from ralphctl.cli.common import console, open_store, print_json
from ralphctl.cli.loop_views import loop_json, loops_table, runner_notes, status_text
from ralphctl.cli.run import DB
from ralphctl.cli.ui import format_duration
from ralphctl.domain.money import format_usd
from ralphctl.engine.steering import messages_json, pending_messages
from ralphctl.store.records import IterationRecord, LoopRecord

if TYPE_CHECKING:
    from ralphctl.store.repository import Store


def status_command(
    limit: int = typer.Option(20, "--limit", help="Show at most this many loops."),
    all_loops: bool = typer.Option(False, "--all", help="Show every loop."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    db: str | None = DB,
) -> None:
    """Loops on this machine, newest first, with iteration, cost and status; with --json,
    also each active loop's messages (`ralphctl tell`) its agent has not been given yet."""
    store = open_store(db)
    records = store.list_loops(limit=None if all_loops else limit)
    loops = [loop_json(loop) for loop in records]
    if json_out:
        pending = [_pending_json(store, loop) for loop in records]
        print_json(
            [entry | {"pending_messages": told} for entry, told in zip(loops, pending, strict=True)]
        )
        return
    if not loops:
        console.print("No loops yet. Start one with `ralphctl run` (or try `ralphctl demo`).")
        return
    console.print(loops_table(loops))
    for note in runner_notes(loops):
        console.print(note)


def history_command(
    loop_id: str = typer.Argument(..., help="The loop's id (or a unique prefix)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    db: str | None = DB,
) -> None:
    """One row per iteration: duration, tokens, cost, marker, error."""
    store = open_store(db)
    loop = store.get_loop(loop_id)
    iterations = store.iterations(loop.id)
    told = messages_json(store, loop.id)
    if json_out:
        iterations_json = [_jsonable(asdict(i)) for i in iterations]
        print_json({"loop": loop_json(loop), "iterations": iterations_json, "messages": told})
        return
    title = Text(f"loop {loop.id} · {loop.name} · ").append_text(status_text(loop_json(loop)))
    table = Table(title=title)
    for column in ("#", "status", "started", "duration", "tokens in/out", "cost", "marker"):
        table.add_column(column, no_wrap=True, min_width=len(column))
    table.add_column("summary / error", overflow="fold")
    for it in iterations:
        table.add_row(
            str(it.n),
            Text(it.status, "green" if it.status == "ok" else "red"),
            it.started_at.astimezone().strftime("%m-%d %H:%M:%S"),
            "" if it.duration_ms is None else f"{it.duration_ms / 1000:.1f}s",
            f"{it.tokens_input}/{it.tokens_output}",
            "" if it.cost_usd is None else format_usd(it.cost_usd),
            _marker(it),
            Text(it.error_message or it.output_summary, "red" if it.error_message else ""),
        )
    console.print(table)
    console.print(
        Text(
            f"total: {loop.iteration} iterations · {format_usd(loop.cost_usd)} · "
            f"{loop.tokens_input + loop.tokens_output} tokens · {format_duration(loop.runtime_s)}"
        )
    )
    for message in told:
        console.print(_message_line(message))


def _message_line(message: dict[str, Any]) -> Text:
    """One message the user told the loop, and where it went."""
    n = message["iteration"]
    went = "pending" if n is None else f"→ iteration {n}"
    line = Text(f"message {message['seq']} from {message['sender']} ({went}): ", "cyan")
    return line.append(" ".join(message["text"].split()), "")


def _marker(it: IterationRecord) -> str:
    if it.completion_signal_found:
        gates = it.gate_results or []
        if any(not gate["passed"] for gate in gates):
            return "complete, gate failed"
        return "complete, gates passed" if gates else "complete"
    return "blocked" if it.blocked_reason else ""


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value.isoformat() if isinstance(value, datetime) else value
        for key, value in data.items()
    }


def _pending_json(store: Store, loop: LoopRecord) -> list[dict[str, Any]]:
    """The messages told to an active loop that its agent has not been given yet."""
    if not loop.status.is_active:
        return []
    return [message.to_json() for message in pending_messages(store, loop.id)]
