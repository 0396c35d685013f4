"""`ralphctl status` and `ralphctl history`: what the loops on this machine did."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from ralphctl.cli.common import console, open_store
from ralphctl.cli.run import DB
from ralphctl.cli.ui import STATUS_STYLE, format_duration, format_tokens
from ralphctl.domain.states import LoopStatus
from ralphctl.engine.control import runner_alive
from ralphctl.store.records import IterationRecord, LoopRecord


def status_command(
    limit: int = typer.Option(20, "--limit", help="Show at most this many loops."),
    all_loops: bool = typer.Option(False, "--all", help="Show every loop."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    db: str | None = DB,
) -> None:
    """Loops on this machine, newest first, with iteration, cost and status."""
    store = open_store(db)
    loops = store.list_loops(limit=None if all_loops else limit)
    if json_out:
        console.print_json(json.dumps([_loop_json(loop) for loop in loops]))
        return
    if not loops:
        console.print("No loops yet. Start one with `ralphctl run` (or try `ralphctl demo`).")
        return
    table = Table(title="loops", title_justify="left")
    for column in ("id", "status", "iter", "cost", "tokens", "runtime", "agent"):
        table.add_column(column, no_wrap=True)
    table.add_column("name · workdir", overflow="fold", min_width=20)
    gone = []
    for loop in loops:
        if loop.status in (LoopStatus.RUNNING, LoopStatus.RATE_LIMITED) and not runner_alive(loop):
            gone.append(loop.id)
        table.add_row(
            loop.id,
            _status_text(loop),
            f"{loop.iteration}/{loop.config.get('max_iterations', '?')}",
            f"${loop.cost_usd:.2f}/{float(loop.config['max_cost_usd']):g}",
            format_tokens(loop.tokens_input + loop.tokens_output),
            format_duration(loop.runtime_s),
            loop.agent,
            f"{loop.name} · {loop.workdir}",
        )
    console.print(table)
    for loop_id in gone:
        console.print(
            f"[red]{loop_id}: its runner is gone; continue it with[/] ralphctl resume {loop_id}"
        )


def history_command(
    loop_id: str = typer.Argument(..., help="The loop's id (or a unique prefix)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    db: str | None = DB,
) -> None:
    """One row per iteration: duration, tokens, cost, marker, error."""
    store = open_store(db)
    loop = store.get_loop(loop_id)
    iterations = store.iterations(loop.id)
    if json_out:
        payload = {
            "loop": _loop_json(loop),
            "iterations": [_jsonable(asdict(i)) for i in iterations],
        }
        console.print_json(json.dumps(payload))
        return
    table = Table(title=f"loop {loop.id} · {loop.name} · {_status_text(loop)}")
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
            "" if it.cost_usd is None else f"${it.cost_usd:.4f}",
            _marker(it),
            Text(it.error_message or it.output_summary, "red" if it.error_message else ""),
        )
    console.print(table)
    console.print(
        f"total: {loop.iteration} iterations · ${loop.cost_usd:.4f} · "
        f"{loop.tokens_input + loop.tokens_output} tokens · {format_duration(loop.runtime_s)}"
    )


def _status_text(loop: LoopRecord) -> Text:
    label = str(loop.status)
    if loop.stop_reason and loop.stop_reason != "completion":
        label += f" ({loop.stop_reason})"
    if loop.status in (LoopStatus.RUNNING, LoopStatus.RATE_LIMITED) and not runner_alive(loop):
        return Text(f"{label}, runner gone", "bold red")
    if loop.status is LoopStatus.RATE_LIMITED and loop.rate_limited_until:
        until = loop.rate_limited_until.astimezone().strftime("%H:%M:%S")
        return Text(f"{label} until {until}", STATUS_STYLE[loop.status])
    return Text(label, STATUS_STYLE.get(loop.status, ""))


def _marker(it: IterationRecord) -> str:
    if it.completion_signal_found:
        gates = it.gate_results or []
        if any(not gate["passed"] for gate in gates):
            return "complete, gate failed"
        return "complete, gates passed" if gates else "complete"
    return "blocked" if it.blocked_reason else ""


def _loop_json(loop: LoopRecord) -> dict[str, Any]:
    data = _jsonable(asdict(loop))
    data["runner_alive"] = runner_alive(loop)
    return data


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value.isoformat() if isinstance(value, datetime) else value
        for key, value in data.items()
    }
