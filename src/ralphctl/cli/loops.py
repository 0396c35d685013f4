"""`ralphctl loops`: start, list and control loops — through the running server, if any.

With a server (`ralphctl serve`) every command goes through its API, so the server's manager
runs the loops. Without one (or with `--db`) they act on the database: `start` and `resume`
run the loop in the foreground, `pause` and `stop` ask the loop's runner through its sentinel
file, or change a loop that no runner runs directly. A fleet loop's worker is asked through
PostgreSQL, and `resume` queues a fleet loop again (docs/fleet.md).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from ralphctl.cli import loop_flags as flag
from ralphctl.cli.common import UsageError, console, err_console, fail, open_store, print_json
from ralphctl.cli.fleetcontrol import resume_in_fleet
from ralphctl.cli.fleetwaits import with_fleet_waits
from ralphctl.cli.foreground import (
    check_agent,
    execute_loop,
    plan_or_exit,
    print_plan,
    resume_here,
)
from ralphctl.cli.loop_views import (
    control_outcome,
    loop_json,
    loop_table,
    loops_table,
    stats_table,
)
from ralphctl.domain.conditions import ExternalSignal
from ralphctl.domain.states import EXIT_FAILED, EXIT_USAGE, IllegalTransition, LoopStatus
from ralphctl.engine.starting import (
    InvalidSpec,
    LoopAlreadyExists,
    LoopRequest,
    check_free,
    in_worktree,
    store_loop,
)

if TYPE_CHECKING:
    from ralphctl.server.client import Client

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
    task_arg: str | None = flag.TASK_ARG,
    task: str | None = flag.TASK,
    task_file: Path | None = flag.TASK_FILE,
    workdir: Path = flag.WORKDIR,
    agent: str | None = flag.AGENT,
    agent_args: str | None = flag.AGENT_ARGS,
    max_iterations: int | None = flag.MAX_ITERATIONS,
    max_runtime: str | None = flag.MAX_RUNTIME,
    max_cost: float | None = flag.MAX_COST,
    max_tokens: int | None = flag.MAX_TOKENS,
    completion_promise: str | None = flag.PROMISE,
    completion_signal: str | None = flag.SIGNAL,
    cooldown: str | None = flag.COOLDOWN,
    checkpoint_interval: int | None = flag.CHECKPOINT,
    iteration_timeout: str | None = flag.ITERATION_TIMEOUT,
    permission_mode: str | None = flag.PERMISSION,
    script: Path | None = flag.SCRIPT,
    agent_command: str | None = flag.AGENT_COMMAND,
    agent_tokens_regex: str | None = flag.AGENT_TOKENS_REGEX,
    agent_cost_regex: str | None = flag.AGENT_COST_REGEX,
    isolate_agent_config: bool | None = flag.ISOLATE_AGENT_CONFIG,
    install_agent: bool | None = flag.INSTALL_AGENT,
    sandbox: bool | None = flag.SANDBOX,
    sandbox_net: str | None = flag.SANDBOX_NET,
    on_question: str | None = flag.ON_QUESTION,
    question_timeout: str | None = flag.QUESTION_TIMEOUT,
    clear_context: bool | None = flag.CLEAR_CONTEXT,
    gate: list[str] | None = flag.GATE,
    max_calls_per_hour: int | None = flag.MAX_CALLS_PER_HOUR,
    checkpoint_branch: str | None = flag.CHECKPOINT_BRANCH,
    name: str | None = flag.NAME,
    mode: str = flag.MODE,
    workflow: str | None = flag.WORKFLOW,
    worktree: bool = typer.Option(
        False, "--worktree", help="Run in a new git worktree beside the work dir (own branch)."
    ),
    no_queue: bool = typer.Option(
        False, "--no-queue", help="Fail instead of waiting when max_concurrent loops run."
    ),
    dry_run: bool = flag.DRY_RUN,
    repo: str | None = typer.Option(
        None, "--repo", help="Fleet mode: the git repository to work on (needs --db postgresql://)."
    ),
    branch: str = typer.Option("main", "--branch", help="Fleet mode: the base branch."),
    require_label: list[str] | None = typer.Option(
        None, "--require-label", help="Fleet mode: run only on a worker with this label."
    ),
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Start a loop: on the server (queued as pending when it is full), else in the foreground.

    Takes the flags of `ralphctl run`. --mode hook runs one Claude Code session kept going by
    its Stop hook (docs/manager.md). With --repo the loop is queued for the fleet's workers
    (docs/fleet.md).
    """
    request = flag.loop_request(locals())
    if repo is not None:
        from ralphctl.cli.fleetstart import start_in_fleet

        start_in_fleet(request, db, repo, branch, require_label or [], dry_run, json_out)
        return
    if dry_run:
        print_plan(plan_or_exit(request))
        return
    client = _client(db)
    if client is None:
        raise typer.Exit(_start_here(request, db, json_out))
    body = {
        "task": request.task,
        "workdir": str(request.workdir),
        "name": request.name,
        "mode": request.mode,
        "workflow": request.workflow,
        "queue": not no_queue,
        "worktree": request.worktree,
        "config": dict(request.settings),
    }
    loop = _call(client.post, "/api/loops", body)
    if json_out:
        print_json(loop)
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
        loops = with_fleet_waits(
            db, [loop_json(loop) for loop in open_store(db).list_loops(status)]
        )
    else:
        loops = _call(client.get, "/api/loops", status=[str(s) for s in status or []] or None)
    if json_out:
        print_json(loops)
    elif not loops:
        console.print("No loops. Start one with `ralphctl loops start`.")
    else:
        console.print(loops_table(loops))


@app.command("show")
def show_command(loop_id: str = LOOP_ID, db: str | None = DB, json_out: bool = JSON) -> None:
    """One loop: its state, totals and budgets."""
    client = _client(db)
    if client is None:
        (loop,) = with_fleet_waits(db, [loop_json(open_store(db).get_loop(loop_id))])
    else:
        loop = _call(client.get, f"/api/loops/{loop_id}")
    if json_out:
        print_json(loop)
    else:
        console.print(loop_table(loop))


@app.command("pause")
def pause_command(
    loop_id: str = LOOP_ID,
    now: bool = typer.Option(
        False, "--now", help="Interrupt the running iteration (recorded as interrupted)."
    ),
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Pause after the running iteration, or at once with --now.

    A hook-mode loop pauses at its session's next Stop; `resume` continues the same session.
    """
    client = _client(db)
    if client is None:
        if now:
            err_console.print(
                "[yellow]note:[/] without a server, --now cannot interrupt another process's"
                " iteration (a fleet loop's worker can): a running loop pauses after it"
            )
        _control_here(loop_id, ExternalSignal.PAUSE, db, json_out, now=now)
        return
    _report(
        _call(client.post, f"/api/loops/{loop_id}/pause", now=now), json_out, ExternalSignal.PAUSE
    )


@app.command("resume")
def resume_command(loop_id: str = LOOP_ID, db: str | None = DB, json_out: bool = JSON) -> None:
    """Continue a paused, stopped or failed loop with its totals intact."""
    client = _client(db)
    if client is None:
        if (queued := resume_in_fleet(loop_id, db)) is not None:
            _report(loop_json(queued), json_out)
            return
        err_console.print("no server is running: the loop resumes in the foreground")
        raise typer.Exit(resume_here(loop_id, {}, db, quiet=False, json_out=json_out))
    _report(_call(client.post, f"/api/loops/{loop_id}/resume"), json_out)


@app.command("stop")
def stop_command(loop_id: str = LOOP_ID, db: str | None = DB, json_out: bool = JSON) -> None:
    """End a loop as stopped (through the server: at once, interrupting its iteration)."""
    client = _client(db)
    if client is None:
        _control_here(loop_id, ExternalSignal.STOP, db, json_out)
        return
    _report(_call(client.post, f"/api/loops/{loop_id}/stop"), json_out, ExternalSignal.STOP)


@app.command("stats")
def stats_command(db: str | None = DB, json_out: bool = JSON) -> None:
    """The loops active now and what they spent so far; every loop, all told (`/api/stats`)."""
    client = _client(db)
    if client is None:
        from ralphctl.server.schemas import StatsOut
        from ralphctl.store.metrics import stats

        figures = StatsOut.of(stats(open_store(db))).model_dump(mode="json")
    else:
        figures = _call(client.get, "/api/stats")
    if json_out:
        print_json(figures)
    else:
        console.print(stats_table(figures))


# -- without a server -----------------------------------------------------------------------


def _start_here(request: LoopRequest, db: str | None, json_out: bool) -> int:
    """Without a server: the loop runs in the foreground, as `ralphctl run` runs it, unless
    another active loop works in its directory (then: --worktree)."""
    plan = plan_or_exit(request)
    check_agent(plan)
    store = open_store(db)
    try:
        if request.worktree:
            plan = asyncio.run(in_worktree(plan))
        else:
            check_free(store, Path(plan.loop.workdir))
        if plan.loop.mode == "hook":
            plan = store_loop(store, plan)
    except (InvalidSpec, LoopAlreadyExists) as exc:
        raise UsageError(str(exc)) from None
    err_console.print(
        "no server is running: the loop runs in the foreground (Ctrl-C stops it;"
        " `ralphctl serve` runs loops in the background)"
    )
    # A fresh loop is created by its runner with its first iteration
    opener = store if plan.loop.mode == "hook" else (lambda: store)
    return execute_loop(opener, plan, quiet=False, json_out=json_out)


def _control_here(
    loop_id: str, signal: ExternalSignal, db: str | None, json_out: bool, *, now: bool = False
) -> None:
    from ralphctl.engine.control import UnsupportedControl, control_directly

    try:
        loop, asked = control_directly(open_store(db), loop_id, signal, now=now)
    except (IllegalTransition, UnsupportedControl) as exc:
        raise UsageError(str(exc)) from None
    if json_out:
        print_json(loop_json(loop))
    else:
        outcome = control_outcome(loop.status, signal, asked)
        console.print(f"loop [bold]{loop.id}[/]: {escape(outcome)}")


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


def _report(loop: dict[str, Any], json_out: bool, asked: ExternalSignal | None = None) -> None:
    """The loop as the server answered; a pause or stop it honours later says so."""
    if json_out:
        print_json(loop)
        return
    outcome = loop["status"] if asked is None else control_outcome(loop["status"], asked)
    console.print(f"loop [bold]{loop['id']}[/]: {outcome}")


# -- output ---------------------------------------------------------------------------------
