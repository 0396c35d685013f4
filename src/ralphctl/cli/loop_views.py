"""How loops read in the terminal: the loops table, one loop's details, the statistics.

Everything renders the JSON shape of a loop (the API's, plus what only this machine can
tell: whether a runner drives it and whether ``ralphctl resume`` can continue it), so a loop
reads the same with a server and without one. Text from the store is never taken as markup.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from rich.table import Table
from rich.text import Text

from ralphctl.cli.ui import (
    STATUS_STYLE,
    count_budget,
    format_duration,
    format_tokens,
    format_usage,
    usd_budget,
)
from ralphctl.domain.conditions import ExternalSignal
from ralphctl.domain.money import format_usd
from ralphctl.domain.states import LoopStatus, Runner, why_not_resumable
from ralphctl.engine.control import runner_of
from ralphctl.store.records import LoopRecord

_SETTLED_BY = {ExternalSignal.PAUSE: LoopStatus.PAUSED, ExternalSignal.STOP: LoopStatus.STOPPED}
#: The statuses in which something drives a loop on: a runner, or the user's own session.
_DRIVEN = (LoopStatus.RUNNING, LoopStatus.RATE_LIMITED)


def loop_json(loop: LoopRecord) -> dict[str, Any]:
    """A stored loop as JSON: its record, its budgets (``max_iterations``, ``max_cost_usd``,
    as the API shows them), ``runner`` (alive, gone or none: no runner ever drove it) and
    whether ``ralphctl resume`` can continue it (``resumable``, else ``why_not_resumable``)."""
    data = {
        key: value.isoformat() if isinstance(value, datetime) else value
        for key, value in asdict(loop).items()
    }
    runner = runner_of(loop)
    why = why_not_resumable(loop.status, loop.mode, runner)
    return data | {
        "max_iterations": loop.config.get("max_iterations"),
        "max_cost_usd": loop.config.get("max_cost_usd"),
        "runner": str(runner),
        "runner_alive": runner is Runner.ALIVE,
        "resumable": why is None,
        "why_not_resumable": why,
    }


def loops_table(loops: list[dict[str, Any]]) -> Table:
    """One row per loop: id, status, iterations and cost of their budgets, tokens, runtime."""
    table = Table(title="loops", title_justify="left")
    for column in ("id", "status", "iter", "cost", "tokens", "runtime", "agent"):
        table.add_column(column, no_wrap=True)
    table.add_column("name · workdir", overflow="fold", min_width=20)
    for loop in loops:
        table.add_row(
            loop["id"],
            status_text(loop),
            _iterations(loop),
            _cost(loop),
            format_tokens(loop["tokens_input"] + loop["tokens_output"]),
            format_duration(loop["runtime_s"]),
            Text(loop["agent"]),
            Text(f"{loop['name']} · {loop['workdir']}"),
        )
    return table


def loop_table(loop: dict[str, Any]) -> Table:
    """One loop's state, totals and budgets, and (on this machine) how to go on with it."""
    table = Table(title=f"loop {loop['id']}", title_justify="left", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    rows: dict[str, str | Text] = {
        "name": loop["name"],
        "status": status_text(loop),
        "detail": loop.get("stop_detail") or "",
        "workdir": loop["workdir"],
        "agent": f"{loop['agent']} ({loop['mode']} mode)",
        "workflow": loop.get("workflow") or "",
        "iteration": _iterations(loop),
        "cost": _cost(loop),
        "tokens": f"{loop['tokens_input']} in, {loop['tokens_output']} out",
        "runtime": format_duration(loop["runtime_s"]),
        "created": loop["created_at"],
        "task": loop["task"],
    }
    if "resumable" in loop:
        rows["resume"] = (
            f"ralphctl resume {loop['id']}"
            if loop["resumable"]
            else f"no: {loop['why_not_resumable']}"
        )
    for field, value in rows.items():
        if value:  # a loop without a workflow or a stop detail has no such row
            table.add_row(field, value if isinstance(value, Text) else Text(str(value)))
    return table


def status_text(loop: dict[str, Any]) -> Text:
    """``running``, ``stopped (max_cost)``, ``running, runner gone``, ``rate_limited until …``."""
    status = LoopStatus(loop["status"])
    label = str(status)
    reason = loop.get("stop_reason")
    if reason and reason not in ("completion", label):
        label += f" ({reason})"
    runner = loop.get("runner")
    if status in _DRIVEN and runner == Runner.GONE:
        return Text(f"{label}, runner gone", "bold red")
    if status in _DRIVEN and runner == Runner.NONE:
        label += " in its own Claude Code session"
    until = loop.get("rate_limited_until")
    if status is LoopStatus.RATE_LIMITED and until:
        label += f" until {datetime.fromisoformat(until).astimezone().strftime('%H:%M:%S')}"
    if waiting := loop.get("waiting_for"):  # a fleet loop no live worker can run
        label += f", {waiting}"
    return Text(label, STATUS_STYLE.get(status, ""))


def runner_notes(loops: list[dict[str, Any]]) -> list[Text]:
    """What to do about each loop whose runner died (resume it, or record its end), and each
    loop whose runner waits for an answer to its agent's question."""
    notes = []
    for loop in loops:
        if loop["status"] == LoopStatus.PAUSED and loop.get("runner") == Runner.ALIVE:
            answer = f'answer with ralphctl tell {loop["id"]} "…"'
            notes.append(Text(f"{loop['id']}: {loop.get('stop_detail')} ({answer})", "magenta"))
        if loop["status"] not in _DRIVEN or loop.get("runner") != Runner.GONE:
            continue
        loop_id = loop["id"]
        if loop.get("resumable"):
            note = f"{loop_id}: its runner is gone; continue it with ralphctl resume {loop_id}"
        else:
            note = (
                f"{loop_id}: its runner is gone, and {loop.get('why_not_resumable')}. "
                f"`ralphctl loops stop {loop_id}` records its end"
            )
        notes.append(Text(note, "red"))
    return notes


def control_outcome(status: str, signal: ExternalSignal, asked: str | None = None) -> str:
    """What a pause or stop did: the status the loop settled in, or that the request waits
    for the running iteration to end (``asked``: of whom it was asked)."""
    if status == _SETTLED_BY[signal]:
        return status
    return f"{signal} requested: {asked or f'it {signal}s after the running iteration'}"


def stats_table(stats: dict[str, Any]) -> Table:
    """``/api/stats``: the loops active now and what they spent so far, then every loop."""
    active, everything = stats["active"], stats["all_time"]
    table = Table(box=None, show_header=True, header_style="bold")
    table.add_column("")
    table.add_column("active now", justify="right")
    table.add_column("all time", justify="right")
    table.add_row("loops", str(active["loops"]), str(everything["loops"]))
    for status in ("pending", "running", "paused", "rate_limited"):
        table.add_row(f"  {status.replace('_', ' ')}", str(active[status]), "")
    table.add_row("iterations", str(active["iterations"]), str(everything["iterations"]))
    table.add_row("cost", format_usd(active["cost_usd"]), format_usd(everything["cost_usd"]))
    table.add_row("tokens", format_tokens(active["tokens"]), format_tokens(everything["tokens"]))
    return table


def _iterations(loop: dict[str, Any]) -> str:
    return format_usage(str(loop["iteration"]), count_budget(loop.get("max_iterations")))


def _cost(loop: dict[str, Any]) -> str:
    return format_usage(format_usd(loop["cost_usd"]), usd_budget(loop.get("max_cost_usd")))
