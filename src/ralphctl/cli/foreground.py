"""Running a loop in the terminal: the service's plan of it, the dry-run preview, the run
itself with its progress and signals, and the final summary. Shared by `run`, `resume`,
`loops start`, `loops resume` (without a server) and `demo`."""

from __future__ import annotations

import asyncio
import json
import shlex
import signal
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ralphctl.agents.base import AgentUnavailable
from ralphctl.cli.common import UsageError, fail, get_console, open_store, print_json
from ralphctl.cli.loop_flags import usage_error
from ralphctl.cli.ui import TerminalObserver, summary_table
from ralphctl.domain.states import EXIT_FAILED, EXIT_LIMIT, EXIT_USAGE
from ralphctl.engine.request import check_agent_ready
from ralphctl.engine.starting import (
    InvalidSpec,
    LoopPlan,
    LoopRequest,
    attach_session,
    new_runner,
    prepare_loop,
    resume_plan,
    store_loop,
)
from ralphctl.store.records import LoopRecord

if TYPE_CHECKING:
    from ralphctl.engine.hookmode.runner import HookLoopRunner
    from ralphctl.engine.runner import LoopRunner
    from ralphctl.store.repository import Store


def check_agent(plan: LoopPlan) -> None:
    """Exit 3 with the install hint if the plan's agent cannot run here (a plugin it needs
    missing included). A missing CLI that ralphctl can install is offered on a terminal."""
    on_terminal = sys.stdin.isatty() and sys.stdout.isatty()
    try:
        check_agent_ready(
            plan.adapter,
            plan.config,
            Path(plan.loop.workdir),
            confirm=_ask if on_terminal else None,
            notify=_notify,
        )
    except AgentUnavailable as exc:
        fail(str(exc), EXIT_FAILED)


def _notify(text: str) -> None:
    from rich.markup import escape

    get_console(stderr=True).print(escape(text))


def _ask(question: str) -> bool:
    return typer.confirm(question, default=True, err=True)


def execute_loop(
    store: Store | Callable[[], Store], plan: LoopPlan, *, quiet: bool, json_out: bool
) -> int:
    """Run the plan in the foreground; its exit code. A function for ``store``: the store
    is opened while the first agent starts (a fresh loop not stored yet)."""
    from ralphctl.notify.during_run import FLUSH_S, deliver_during_run
    from ralphctl.store.errors import StoreError

    out = partial(get_console, stderr=json_out)
    reopen = store if callable(store) else partial(type(store).open, store.url)
    notifier = deliver_during_run(reopen, Path(plan.loop.workdir))
    with TerminalObserver(out, plan.loop, plan.config, quiet=quiet or json_out) as observer:
        runner = new_runner(store, plan, observer=observer)
        try:
            final = asyncio.run(_run_with_signals(runner, observer))
        except StoreError as exc:
            if not runner.stored:
                fail(_not_recorded(exc, Path(plan.loop.workdir)), EXIT_USAGE)
            fail(
                f"{exc}. The loop stopped; everything recorded before is kept. Fix the cause "
                f"(e.g. free disk space), then: ralphctl resume {plan.loop.id}",
                EXIT_FAILED,
            )
        finally:
            if notifier is not None:  # the rest stays in the outbox for the next run or serve
                notifier.stop(flush_s=FLUSH_S)
            _close_store(store, runner)
    if json_out:
        print_json(summary_json(final))
    else:
        get_console().print(summary_table(final))
    if final.stop_reason is None:  # paused
        return EXIT_LIMIT
    return final.stop_reason.exit_code


def _close_store(store: Store | Callable[[], Store], runner: LoopRunner | HookLoopRunner) -> None:
    """Close the database the run used, the one the runner opened included: SQLite folds its
    write-ahead log back into the database file then, not left to the process's exit."""
    from ralphctl.engine.runner import LoopRunner  # loaded already: the runner is one

    if not callable(store):
        store.close()
    elif isinstance(runner, LoopRunner) and runner.stored:
        runner.store.close()


def print_plan(plan: LoopPlan) -> None:
    """``--dry-run``: the resolved settings and where each came from, the agent's command
    and (fresh mode) the first prompt."""
    from rich.table import Table

    from ralphctl.engine.preview import first_command

    console = get_console()
    table = Table(title="ralphctl --dry-run", show_lines=False)
    table.add_column("setting")
    table.add_column("value")
    table.add_column("from", style="dim")
    for field, value in plan.config.to_json().items():
        table.add_row(field, json.dumps(value), plan.sources.get(field, "default"))
    console.print(table)
    try:
        command, prompt = first_command(plan)
    except ValueError as exc:
        fail(str(exc), EXIT_USAGE)
    except AgentUnavailable as exc:  # a sandbox asked for that cannot be made here
        fail(str(exc), EXIT_FAILED)
    console.print(f"[bold]workdir[/] {plan.loop.workdir}")
    console.print(f"[bold]command[/] {shlex.join(command.argv)}", soft_wrap=True)
    for key, value in command.env.items():
        console.print(f"[bold]env[/] {key}={value}")
    if prompt is not None:
        where = "on the agent's stdin" if command.prompt_file is None else "in its prompt file"
        console.rule(f"prompt of iteration 1 ({where})")
        console.out(prompt, highlight=False)


def plan_or_exit(request: LoopRequest) -> LoopPlan:
    """The service's plan of the request, or exit 2 with its reason."""
    try:
        return prepare_loop(request)
    except InvalidSpec as exc:
        raise usage_error(exc) from None


def run_here(plan: LoopPlan, db: str | None, *, quiet: bool, json_out: bool) -> int:
    """Run a new loop in the foreground. A fresh loop starts its agent at once and opens the
    store while it runs (start-up budget), after checking cheaply that the database can be
    used; a hook-mode loop is stored first (its session's tracker is armed with it)."""
    if plan.loop.mode == "hook":
        store = open_store(db)
        try:
            plan = store_loop(store, plan)
        except InvalidSpec as exc:
            raise usage_error(exc) from None
        return execute_loop(store, plan, quiet=quiet, json_out=json_out)
    from ralphctl.store.precheck import check_database

    check_database(db)
    return execute_loop(partial(open_store, db), plan, quiet=quiet, json_out=json_out)


def resume_here(
    loop_id: str, settings: dict[str, Any], db: str | None, quiet: bool, json_out: bool
) -> int:
    """Run a stored loop again in the foreground, its budgets raised by ``settings``."""
    from ralphctl.engine.control import UnsupportedControl, check_resumable

    store = open_store(db)
    loop = store.get_loop(loop_id)
    try:
        check_resumable(loop)  # the one rule: completed, running, or a session not to enter
    except UnsupportedControl as exc:
        raise UsageError(str(exc)) from None
    try:
        plan = resume_plan(loop, settings)
    except InvalidSpec as exc:
        raise UsageError(str(exc)) from None
    check_agent(plan)
    try:
        plan = attach_session(plan)
    except InvalidSpec as exc:
        raise UsageError(str(exc)) from None
    if plan.loop.config != loop.config:
        store.save_loop(plan.loop)
    return execute_loop(store, plan, quiet=quiet, json_out=json_out)


def summary_json(loop: LoopRecord) -> dict[str, Any]:
    return {
        "loop_id": loop.id,
        "status": str(loop.status),
        "stop_reason": loop.stop_reason and str(loop.stop_reason),
        "stop_detail": loop.stop_detail,
        "iterations": loop.iteration,
        "cost_usd": loop.cost_usd,
        "tokens_input": loop.tokens_input,
        "tokens_output": loop.tokens_output,
        "runtime_s": round(loop.runtime_s, 3),
        "workdir": loop.workdir,
    }


def _not_recorded(exc: Exception, workdir: Path) -> str:
    """The database failed before the loop was stored: the agent was stopped, and what it
    may already have changed is listed, never reverted."""
    from ralphctl.engine.changes import changes_summary

    changed = asyncio.run(changes_summary(workdir))
    return (
        f"database: {exc}. The agent was stopped before anything was recorded; nothing was "
        f"reverted. {changed}"
    )


async def _run_with_signals(
    runner: LoopRunner | HookLoopRunner, observer: TerminalObserver
) -> LoopRecord:
    """Run the loop; the first SIGINT/SIGTERM interrupts cleanly, a second one forces."""
    control = runner.control
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if control.interrupt.is_set():
            control.force.set()
            observer.notice("forcing: killing the agent now")
        else:
            control.interrupt.set()
            observer.notice("interrupting: stopping the agent, saving the loop (again to force)")

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        return await runner.run()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
