"""`ralphctl loops`: start, list and control loops — through the running server, if any.

With a server (`ralphctl serve`) every command goes through its API, so the server's manager
runs the loops. Without one (or with `--db`) they act on the database: `start` and `resume`
run the loop in the foreground, `pause` and `stop` ask the loop's runner through its sentinel
file, or change a loop that no runner runs directly.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import asdict, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ralphctl.cli import run
from ralphctl.cli.common import UsageError, console, err_console, fail, open_store
from ralphctl.cli.ui import STATUS_STYLE, format_duration, format_tokens
from ralphctl.domain.conditions import ExternalSignal
from ralphctl.domain.states import EXIT_FAILED, EXIT_USAGE, IllegalTransition, LoopStatus
from ralphctl.engine.loops import default_name, new_loop
from ralphctl.settings import resolve_loop_config

if TYPE_CHECKING:
    from ralphctl.server.client import Client
    from ralphctl.store.records import LoopRecord

app = typer.Typer(
    help="Start, list and control loops (through `ralphctl serve` when it runs).",
    no_args_is_help=True,
)

DB = typer.Option(
    None, "--db", help="Act on this database directly, even when a server runs (env RALPHCTL_DB)."
)
JSON = typer.Option(False, "--json", help="Print JSON.")
LOOP_ID = typer.Argument(..., help="The loop's id (or a unique prefix).")


@app.command("start")
def start_command(
    task: str | None = typer.Option(None, "--task", "-t", help="The task, as text."),
    task_file: Path | None = typer.Option(None, "--task-file", "-f", help="Read the task here."),
    workdir: Path = typer.Option(Path("."), "--workdir", "-C", help="Where the agent works."),
    agent: str | None = run.AGENT,
    agent_args: str | None = run.AGENT_ARGS,
    max_iterations: int | None = run.MAX_ITERATIONS,
    max_runtime: str | None = run.MAX_RUNTIME,
    max_cost: float | None = run.MAX_COST,
    max_tokens: int | None = run.MAX_TOKENS,
    completion_promise: str | None = run.PROMISE,
    completion_signal: str | None = run.SIGNAL,
    cooldown: str | None = run.COOLDOWN,
    checkpoint_interval: int | None = run.CHECKPOINT,
    iteration_timeout: str | None = run.ITERATION_TIMEOUT,
    permission_mode: str | None = run.PERMISSION,
    script: Path | None = run.SCRIPT,
    gate: list[str] | None = typer.Option(
        None, "--gate", help="A command that must pass before completion counts (repeatable)."
    ),
    name: str | None = typer.Option(None, "--name", help="A name for the loop."),
    mode: str = run.MODE,
    workflow: str | None = typer.Option(
        None, "--workflow", "-w", help="Run an installed workflow; the task is its input."
    ),
    worktree: bool = typer.Option(
        False, "--worktree", help="Run in a new git worktree beside the work dir (own branch)."
    ),
    no_queue: bool = typer.Option(
        False, "--no-queue", help="Fail instead of waiting when max_concurrent loops run."
    ),
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Start a loop: on the server (queued as pending when it is full), else in the foreground.

    --mode hook runs one Claude Code session kept going by its Stop hook: it can be stopped,
    not paused, and not resumed once it has run (docs/manager.md).
    """
    text = run._task_text(None, task, task_file)
    root = run._workdir(workdir)
    run.check_mode(mode)
    overrides = {k: v for k, v in run._overrides(locals()).items() if v is not None}
    client = _client(db)
    if client is None:
        start = _start_hook_here if mode == "hook" else _start_here
        start(text, root, overrides, name, workflow, worktree, db, json_out)
        return
    body = {
        "task": text,
        "workdir": str(root),
        "name": name,
        "mode": mode,
        "workflow": workflow,
        "queue": not no_queue,
        "worktree": worktree,
        "config": overrides,
    }
    loop = _call(client.post, "/api/loops", body)
    if json_out:
        _print_json(loop)
    else:
        state = "queued (pending)" if loop["status"] == "pending" else loop["status"]
        console.print(f"loop [bold]{loop['id']}[/] {state} in {escape(loop['workdir'])}")


@app.command("ls")
def list_command(
    status: list[LoopStatus] | None = typer.Option(
        None, "--status", "-s", help="Only loops in this status (repeatable)."
    ),
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Loops, newest first."""
    client = _client(db)
    if client is None:
        loops = [_loop_json(loop) for loop in open_store(db).list_loops(status)]
    else:
        loops = _call(client.get, "/api/loops", status=[str(s) for s in status or []] or None)
    if json_out:
        _print_json(loops)
    elif not loops:
        console.print("No loops. Start one with `ralphctl loops start`.")
    else:
        console.print(_loops_table(loops))


@app.command("show")
def show_command(loop_id: str = LOOP_ID, db: str | None = DB, json_out: bool = JSON) -> None:
    """One loop: its state, totals and budgets."""
    client = _client(db)
    if client is None:
        loop = _loop_json(open_store(db).get_loop(loop_id))
    else:
        loop = _call(client.get, f"/api/loops/{loop_id}")
    if json_out:
        _print_json(loop)
    else:
        console.print(_loop_table(loop))


@app.command("pause")
def pause_command(
    loop_id: str = LOOP_ID,
    now: bool = typer.Option(
        False, "--now", help="Interrupt the running iteration (recorded as interrupted)."
    ),
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Pause after the running iteration, or at once with --now."""
    client = _client(db)
    if client is None:
        if now:
            err_console.print(
                "[yellow]note:[/] without a server, --now cannot interrupt another process's"
                " iteration: a running loop pauses after it"
            )
        _control_here(loop_id, ExternalSignal.PAUSE, db, json_out)
        return
    _report(_call(client.post, f"/api/loops/{loop_id}/pause", now=now), json_out)


@app.command("resume")
def resume_command(loop_id: str = LOOP_ID, db: str | None = DB, json_out: bool = JSON) -> None:
    """Continue a paused, stopped or failed loop with its totals intact."""
    client = _client(db)
    if client is None:
        err_console.print("no server is running: the loop resumes in the foreground")
        run.resume_command(
            loop_id=loop_id,
            max_iterations=None,
            max_runtime=None,
            max_cost=None,
            max_tokens=None,
            cooldown=None,
            iteration_timeout=None,
            db=db,
            quiet=False,
            json_out=json_out,
        )
        return
    _report(_call(client.post, f"/api/loops/{loop_id}/resume"), json_out)


@app.command("stop")
def stop_command(loop_id: str = LOOP_ID, db: str | None = DB, json_out: bool = JSON) -> None:
    """End a loop as stopped (through the server: at once, interrupting its iteration)."""
    client = _client(db)
    if client is None:
        _control_here(loop_id, ExternalSignal.STOP, db, json_out)
        return
    _report(_call(client.post, f"/api/loops/{loop_id}/stop"), json_out)


@app.command("stats")
def stats_command(db: str | None = DB, json_out: bool = JSON) -> None:
    """Active, running and paused loops; cost, iterations and tokens of every loop."""
    client = _client(db)
    if client is None:
        from ralphctl.engine.manager import loop_stats

        stats = asdict(loop_stats(open_store(db)))
    else:
        stats = _call(client.get, "/api/stats")
    if json_out:
        _print_json(stats)
        return
    table = Table(show_header=False, box=None)
    for key, value in stats.items():
        table.add_row(key.replace("_", " "), _stat(key, value))
    console.print(table)


# -- without a server -----------------------------------------------------------------------


def _start_here(
    text: str,
    root: Path,
    overrides: dict[str, Any],
    name: str | None,
    workflow: str | None,
    worktree: bool,
    db: str | None,
    json_out: bool,
) -> None:
    from ralphctl.engine.manager import (
        InvalidSpec,
        active_loop_in,
        render_workflow,
        workflow_layer,
    )

    try:
        layer = workflow_layer(workflow) if workflow else None
    except InvalidSpec as exc:
        raise UsageError(str(exc)) from None
    config = resolve_loop_config(root, overrides, extra=layer).config
    adapter = run._adapter(config, root)
    run._check_agent(adapter)
    store = open_store(db)
    if not worktree:
        _refuse_busy(active_loop_in(store, root), root)
    loop = new_loop(text, root, config, name=name)
    if workflow:
        loop = replace(loop, task=render_workflow(workflow, text), workflow=workflow)
    if worktree:
        loop = replace(loop, workdir=str(_add_worktree(root, loop.id)))
    err_console.print(
        "no server is running: the loop runs in the foreground (Ctrl-C stops it;"
        " `ralphctl serve` runs loops in the background)"
    )
    # Given as a function, the store is where the runner creates the loop with its first iteration
    code = run.execute_loop(lambda: store, loop, config, adapter, False, json_out)
    raise typer.Exit(code)


def _start_hook_here(
    text: str,
    root: Path,
    overrides: dict[str, Any],
    name: str | None,
    workflow: str | None,
    worktree: bool,
    db: str | None,
    json_out: bool,
) -> None:
    """A hook-mode loop in the foreground, as `ralphctl run --mode hook` runs it."""
    from ralphctl.engine.manager import active_loop_in

    layer = None
    if workflow is not None:
        text, layer = run._workflow_layer(workflow, text)
    config = resolve_loop_config(root, overrides, extra=layer).config
    loop_id = uuid.uuid4().hex[:12]
    if worktree:
        root = _add_worktree(root, loop_id)
    else:
        _refuse_busy(active_loop_in(open_store(db), root), root)
    err_console.print("no server is running: the loop runs in the foreground (Ctrl-C stops it)")
    code = run.run_hook_mode(
        text,
        root,
        config,
        overrides,
        workflow=workflow,
        name=name or default_name(text),
        db=db,
        dry_run=False,
        quiet=False,
        json_out=json_out,
        loop_id=loop_id,
    )
    raise typer.Exit(code)


def _refuse_busy(other: LoopRecord | None, root: Path) -> None:
    if other is not None:
        raise UsageError(
            f"loop {other.id} ({other.status}) already works in {root}: stop it, or start "
            "this one with --worktree"
        )


def _add_worktree(root: Path, loop_id: str) -> Path:
    from ralphctl.engine.checkpoint import GitError
    from ralphctl.engine.worktree import add_worktree

    try:
        return asyncio.run(add_worktree(root, loop_id))
    except GitError as exc:
        raise UsageError(str(exc)) from None


def _control_here(loop_id: str, signal: ExternalSignal, db: str | None, json_out: bool) -> None:
    from ralphctl.engine.control import UnsupportedControl, control_directly

    try:
        loop, asked = control_directly(open_store(db), loop_id, signal)
    except (IllegalTransition, UnsupportedControl) as exc:
        raise UsageError(str(exc)) from None
    if json_out:
        _print_json(_loop_json(loop))
    else:
        console.print(f"loop [bold]{loop.id}[/]: {escape(asked or str(loop.status))}")


# -- through the server ---------------------------------------------------------------------


def _client(db: str | None) -> Client | None:
    """The running server's client, unless --db asks for the database itself."""
    if db is not None:
        return None
    from ralphctl.server.client import Client

    return Client.discover()


def _call(method: Any, path: str, *args: Any, **query: Any) -> Any:
    from ralphctl.server.client import ApiError, ServerUnavailable

    try:
        return method(path, *args, **query)
    except ApiError as exc:
        fail(exc.detail, EXIT_USAGE if exc.status < 500 else EXIT_FAILED)
    except ServerUnavailable as exc:
        fail(f"{exc}; is `ralphctl serve` still running?", EXIT_FAILED)


def _report(loop: dict[str, Any], json_out: bool) -> None:
    if json_out:
        _print_json(loop)
    else:
        console.print(f"loop [bold]{loop['id']}[/]: {loop['status']}")


# -- output ---------------------------------------------------------------------------------


def _loop_json(loop: LoopRecord) -> dict[str, Any]:
    """A loop as the API shows it (``max_iterations`` and ``max_cost_usd`` are its budgets)."""
    data = {
        key: value.isoformat() if isinstance(value, datetime) else value
        for key, value in asdict(loop).items()
    }
    data["max_iterations"] = loop.config.get("max_iterations")
    data["max_cost_usd"] = loop.config.get("max_cost_usd")
    return data


def _print_json(data: Any) -> None:
    console.print_json(json.dumps(data))


def _loops_table(loops: list[dict[str, Any]]) -> Table:
    table = Table(title="loops", title_justify="left")
    for column in ("id", "status", "iter", "cost", "tokens", "runtime", "agent"):
        table.add_column(column, no_wrap=True)
    table.add_column("name · workdir", overflow="fold", min_width=20)
    for loop in loops:
        table.add_row(
            loop["id"],
            _status(loop),
            f"{loop['iteration']}/{loop.get('max_iterations') or '?'}",
            f"${loop['cost_usd']:.2f}/{loop.get('max_cost_usd') or '?'}",
            format_tokens(loop["tokens_input"] + loop["tokens_output"]),
            format_duration(loop["runtime_s"]),
            loop["agent"],
            escape(f"{loop['name']} · {loop['workdir']}"),
        )
    return table


def _loop_table(loop: dict[str, Any]) -> Table:
    table = Table(title=f"loop {loop['id']}", title_justify="left", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    rows = {
        "name": loop["name"],
        "status": _status(loop),
        "detail": loop.get("stop_detail") or "",
        "workdir": loop["workdir"],
        "agent": loop["agent"],
        "workflow": loop.get("workflow") or "",
        "iteration": f"{loop['iteration']} of {loop.get('max_iterations') or '?'}",
        "cost": f"${loop['cost_usd']:.4f} of ${loop.get('max_cost_usd') or '?'}",
        "tokens": f"{loop['tokens_input']} in, {loop['tokens_output']} out",
        "runtime": format_duration(loop["runtime_s"]),
        "created": loop["created_at"],
        "task": loop["task"],
    }
    for field, value in rows.items():
        table.add_row(field, value if isinstance(value, Text) else escape(str(value)))
    return table


def _stat(key: str, value: float) -> str:
    if key == "total_cost":
        return f"${value:.4f}"
    return format_tokens(int(value)) if key == "total_tokens" else str(value)


def _status(loop: dict[str, Any]) -> Text:
    status = LoopStatus(loop["status"])
    reason = loop.get("stop_reason")
    label = f"{status} ({reason})" if reason and reason != "completion" else str(status)
    return Text(label, STATUS_STYLE.get(status, ""))
