"""`ralphctl run` and `ralphctl resume`: run a fresh-context loop in the foreground."""

from __future__ import annotations

import asyncio
import json
import shlex
import signal
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ralphctl.agents.base import AgentAdapter, AgentUnavailable
from ralphctl.cli.common import UsageError, console, err_console, fail, open_store
from ralphctl.cli.ui import TerminalObserver, summary_table
from ralphctl.domain.conditions import remaining
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.markers import promise
from ralphctl.domain.states import EXIT_FAILED, EXIT_LIMIT, EXIT_USAGE, LoopStatus
from ralphctl.domain.stoprules import Totals
from ralphctl.engine.control import runner_alive
from ralphctl.engine.loops import default_name, new_loop
from ralphctl.engine.prompt import PromptContext, build_prompt
from ralphctl.engine.request import agent_request
from ralphctl.settings import ResolvedConfig, resolve_loop_config
from ralphctl.store.records import LoopRecord

if TYPE_CHECKING:
    from ralphctl.store.repository import Store

# -- shared options (typer declares options per function; these keep them identical) -------

AGENT = typer.Option(None, "--agent", "-a", help="Agent adapter: claude (default), scripted.")
AGENT_ARGS = typer.Option(
    None,
    "--agent-args",
    "--claude-args",
    help="Extra arguments for the agent CLI, as one shell-quoted string.",
)
MAX_ITERATIONS = typer.Option(None, "--max-iterations", "-n", help="Iteration budget (100).")
MAX_RUNTIME = typer.Option(None, "--max-runtime", help="Runtime budget, e.g. 90m, 4h (4h).")
MAX_COST = typer.Option(None, "--max-cost", help="Cost budget in USD (300).")
MAX_TOKENS = typer.Option(None, "--max-tokens", help="Input+output token budget (none).")
PROMISE = typer.Option(
    None, "--completion-promise", help="Complete on <promise>TEXT</promise> (COMPLETE)."
)
SIGNAL = typer.Option(
    None, "--completion-signal", help="Raw completion signal, tagged or a plain last-line marker."
)
COOLDOWN = typer.Option(None, "--cooldown", help="Pause between iterations, e.g. 5s (5s).")
CHECKPOINT = typer.Option(None, "--checkpoint-interval", help="Git checkpoint every N (5).")
ITERATION_TIMEOUT = typer.Option(None, "--iteration-timeout", help="Per-iteration limit (1h).")
PERMISSION = typer.Option(
    None, "--permission-mode", help="Claude Code permission mode (acceptEdits)."
)
SCRIPT = typer.Option(None, "--script", help="Script file for the scripted agent.")
DB = typer.Option(None, "--db", help="Database URL or SQLite path (env RALPHCTL_DB).")
QUIET = typer.Option(False, "--quiet", "-q", help="Print only the final summary.")
JSON = typer.Option(False, "--json", help="Print the final summary as JSON.")
MODE = typer.Option(
    "fresh",
    "--mode",
    help="fresh: a new agent session per iteration; hook: one Claude Code session, "
    "kept going by a Stop hook (docs/hook-mode.md).",
)


def run_command(
    task_arg: str | None = typer.Argument(None, metavar="[TASK]", help="The task, as text."),
    task: str | None = typer.Option(None, "--task", "-t", help="The task, as text."),
    task_file: Path | None = typer.Option(None, "--task-file", "-f", help="Read the task here."),
    agent: str | None = AGENT,
    agent_args: str | None = AGENT_ARGS,
    max_iterations: int | None = MAX_ITERATIONS,
    max_runtime: str | None = MAX_RUNTIME,
    max_cost: float | None = MAX_COST,
    max_tokens: int | None = MAX_TOKENS,
    completion_promise: str | None = PROMISE,
    completion_signal: str | None = SIGNAL,
    cooldown: str | None = COOLDOWN,
    checkpoint_interval: int | None = CHECKPOINT,
    iteration_timeout: str | None = ITERATION_TIMEOUT,
    permission_mode: str | None = PERMISSION,
    script: Path | None = SCRIPT,
    workdir: Path = typer.Option(Path("."), "--workdir", "-C", help="Where the agent works."),
    workflow: str | None = typer.Option(
        None, "--workflow", "-w", help="Run an installed workflow; the task is its input."
    ),
    gate: list[str] | None = typer.Option(
        None, "--gate", help="A command that must pass before completion counts (repeatable)."
    ),
    max_calls_per_hour: int | None = typer.Option(
        None, "--max-calls-per-hour", help="Agent calls per hour for this loop (no limit)."
    ),
    checkpoint_branch: str | None = typer.Option(
        None, "--checkpoint-branch", help="Commit checkpoints to this branch, not HEAD's."
    ),
    name: str | None = typer.Option(None, "--name", help="A name for the loop."),
    mode: str = MODE,
    db: str | None = DB,
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the configuration and the agent command; run nothing."
    ),
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Run an agent in a loop until the task is done or a budget says stop.

    Exit codes: 0 completed, 1 a limit (or paused), 2 bad arguments or configuration,
    3 failed (circuit breaker, agent missing), 4 blocked, 130 interrupted.
    """
    text = _task_text(task_arg, task, task_file)
    root = _workdir(workdir)
    overrides = _overrides(locals())
    layer = None
    if workflow is not None:
        text, layer = _workflow_layer(workflow, text)
    resolved = resolve_loop_config(root, overrides, extra=layer)
    check_mode(mode)
    if mode == "hook":
        exit_code = run_hook_mode(
            text,
            root,
            resolved.config,
            overrides,
            workflow=workflow,
            name=name or default_name(text),
            db=db,
            dry_run=dry_run,
            quiet=quiet,
            json_out=json_out,
        )
        raise typer.Exit(exit_code)
    adapter = _adapter(resolved.config, root)
    if dry_run:
        _print_dry_run(resolved, adapter, text, root)
        return
    _check_agent(adapter)
    loop = new_loop(text, root, resolved.config, name=name, workflow=workflow)
    opener = partial(open_store, db)  # opened while the first agent starts: see LoopRunner
    raise typer.Exit(execute_loop(opener, loop, resolved.config, adapter, quiet, json_out))


def resume_command(
    loop_id: str = typer.Argument(..., help="The loop's id (or a unique prefix)."),
    max_iterations: int | None = MAX_ITERATIONS,
    max_runtime: str | None = MAX_RUNTIME,
    max_cost: float | None = MAX_COST,
    max_tokens: int | None = MAX_TOKENS,
    cooldown: str | None = COOLDOWN,
    iteration_timeout: str | None = ITERATION_TIMEOUT,
    db: str | None = DB,
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Continue a paused, stopped, failed, blocked or crashed loop with its totals intact
    (a hook-mode loop: a paused one, in the same Claude Code session).

    Budgets may be raised with the same flags as `run`; everything else is as stored.
    """
    from ralphctl.engine.control import UnsupportedControl, check_resumable

    store = open_store(db)
    loop = store.get_loop(loop_id)
    if loop.status is LoopStatus.COMPLETED:
        raise UsageError(f"loop {loop.id} has completed; start a new one with `ralphctl run`")
    try:
        check_resumable(loop)
    except UnsupportedControl as exc:
        raise UsageError(str(exc)) from None
    if loop.status in (LoopStatus.RUNNING, LoopStatus.RATE_LIMITED) and runner_alive(loop):
        raise UsageError(
            f"loop {loop.id} is running in process {loop.runner_pid} on {loop.runner_host}"
        )
    root = Path(loop.workdir)
    if not root.is_dir():
        raise UsageError(f"the loop's work dir {root} no longer exists")
    resolved = resolve_loop_config(root, _overrides(locals()), base=loop.config)
    adapter = _adapter(resolved.config, root)
    _check_agent(adapter)
    if resolved.config.to_json() != loop.config:
        loop = store.save_loop(_with_config(loop, resolved.config))
    make_runner = (
        _hook_runner(store, loop, resolved.config, adapter) if loop.mode == "hook" else None
    )
    raise typer.Exit(
        execute_loop(store, loop, resolved.config, adapter, quiet, json_out, make_runner)
    )


# -- running --------------------------------------------------------------------------------


def execute_loop(
    store: Store | Callable[[], Store],
    loop: LoopRecord,
    config: LoopConfig,
    adapter: AgentAdapter,
    quiet: bool,
    json_out: bool,
    make_runner: Callable[[TerminalObserver], Any] | None = None,
) -> int:
    """Run the loop in the foreground (``make_runner``: another runner than fresh mode's)."""
    from ralphctl.engine.runner import LoopRunner
    from ralphctl.store.errors import StoreError

    out = err_console if json_out else console
    with TerminalObserver(out, loop, config, quiet=quiet or json_out) as observer:
        if make_runner is None:
            runner = LoopRunner(store, adapter, loop, config, observer=observer)
        else:
            runner = make_runner(observer)
        try:
            final = asyncio.run(_run_with_signals(runner, observer))
        except StoreError as exc:
            if not runner.stored:
                raise  # the database could not be opened: a configuration problem (exit 2)
            fail(
                f"{exc}. The loop stopped; everything recorded before is kept. Fix the cause "
                f"(e.g. free disk space), then: ralphctl resume {loop.id}",
                EXIT_FAILED,
            )
    if json_out:
        console.print_json(json.dumps(_summary_json(final)))
    else:
        console.print(summary_table(final))
    if final.stop_reason is None:  # paused
        return EXIT_LIMIT
    return final.stop_reason.exit_code


async def _run_with_signals(runner: Any, observer: TerminalObserver) -> LoopRecord:
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
        result: LoopRecord = await runner.run()
        return result
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def check_mode(mode: str) -> None:
    if mode not in ("fresh", "hook"):
        raise UsageError(f"--mode {mode}: use fresh or hook")


def run_hook_mode(
    task: str,
    root: Path,
    config: LoopConfig,
    flags: dict[str, Any],
    *,
    workflow: str | None,
    name: str,
    db: str | None,
    dry_run: bool,
    quiet: bool,
    json_out: bool,
    loop_id: str | None = None,
) -> int:
    """One Claude Code session kept going by a Stop hook (docs/hook-mode.md)."""
    from ralphctl.engine.hookmode.runner import HookLoopRunner
    from ralphctl.engine.hookmode.setup import HookModeError, check, prepare, preview

    try:
        check(config, flags)
        adapter = _adapter(config, root)
        if dry_run:
            command = preview(adapter, config, root)
            console.print(f"[bold]command[/] {shlex.join(command.argv)}", soft_wrap=True)
            for key, value in command.env.items():
                console.print(f"[bold]env[/] {key}={value}")
            return 0
        _check_agent(adapter)
        store = open_store(db)
        ready = prepare(
            store, adapter, task, root, config, name=name, workflow=workflow, loop_id=loop_id
        )
    except HookModeError as exc:
        raise UsageError(str(exc)) from None

    def make_runner(observer: TerminalObserver) -> HookLoopRunner:
        return HookLoopRunner(store, adapter, ready.loop, config, ready.session, observer=observer)

    return execute_loop(store, ready.loop, config, adapter, quiet, json_out, make_runner)


def _hook_runner(
    store: Store, loop: LoopRecord, config: LoopConfig, adapter: AgentAdapter
) -> Callable[[TerminalObserver], Any]:
    """The runner that continues a paused hook-mode loop's session."""
    from ralphctl.engine.hookmode.managed import session_of
    from ralphctl.engine.hookmode.runner import HookLoopRunner
    from ralphctl.engine.hookmode.setup import HookModeError

    try:
        session = session_of(loop)
    except HookModeError as exc:
        raise UsageError(str(exc)) from None

    def make_runner(observer: TerminalObserver) -> HookLoopRunner:
        return HookLoopRunner(store, adapter, loop, config, session, observer=observer)

    return make_runner


# -- helpers --------------------------------------------------------------------------------

_FLAG_FIELDS = {
    "max_iterations": "max_iterations",
    "max_runtime": "max_runtime",
    "max_cost": "max_cost_usd",
    "max_tokens": "max_tokens",
    "cooldown": "cooldown",
    "checkpoint_interval": "checkpoint_interval",
    "iteration_timeout": "iteration_timeout",
    "permission_mode": "permission_mode",
    "agent": "agent",
    "completion_signal": "completion_signal",
    "max_calls_per_hour": "max_calls_per_hour",
    "checkpoint_branch": "checkpoint_branch",
}


def _overrides(flags: dict[str, Any]) -> dict[str, Any]:
    """Turn the flags given into LoopConfig fields (flags left out are None and skipped)."""
    values = {field: flags.get(flag) for flag, field in _FLAG_FIELDS.items()}
    if flags.get("completion_promise") is not None:
        if flags.get("completion_signal") is not None:
            raise UsageError("give --completion-promise or --completion-signal, not both")
        marker = promise(flags["completion_promise"])
        values["completion_signal"] = f"<promise>{marker.text}</promise>"
    if flags.get("agent_args") is not None:
        try:
            values["agent_args"] = shlex.split(flags["agent_args"])
        except ValueError as exc:
            raise UsageError(f"--agent-args: {exc}") from None
    if flags.get("gate"):
        values["gates"] = list(flags["gate"])
    if flags.get("script") is not None:
        values["script"] = str(Path(flags["script"]).resolve())
        values["agent"] = values["agent"] or "scripted"
    return values


def _workflow_layer(name: str, task: str) -> tuple[str, tuple[str, dict[str, Any]]]:
    """The workflow's prompt for this input, and its settings as a configuration layer."""
    from ralphctl.workflows.model import WorkflowError
    from ralphctl.workflows.registry import resolve

    try:
        flow = resolve(name)
    except WorkflowError as exc:
        raise UsageError(str(exc)) from None
    values = {
        "completion_signal": flow.loop.completion_marker,
        "max_iterations": flow.loop.max_iterations if flow.loop.enabled else 1,
    }
    return flow.render_prompt(task), (f"workflow {name}", values)


def _task_text(positional: str | None, task: str | None, task_file: Path | None) -> str:
    given = [value for value in (positional, task, task_file) if value is not None]
    if len(given) != 1:
        raise UsageError("give the task once: as TASK, --task TEXT or --task-file PATH")
    if task_file is not None:
        try:
            text = task_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--task-file {task_file}: cannot read it ({exc})") from None
    else:
        text = str(given[0])
    if not text.strip():
        raise UsageError("the task is empty")
    return text


def _workdir(path: Path) -> Path:
    root = path.expanduser().resolve()
    if not root.is_dir():
        raise UsageError(f"--workdir {path}: not a directory")
    return root


def _adapter(config: LoopConfig, root: Path) -> AgentAdapter:
    from ralphctl.agents.registry import adapter_for

    options = {"script": config.script} if config.script else {}
    try:
        return adapter_for(config.agent, options=options)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _check_agent(adapter: AgentAdapter) -> None:
    try:
        adapter.check_available()
    except AgentUnavailable as exc:
        fail(str(exc), EXIT_FAILED)


def _print_dry_run(resolved: ResolvedConfig, adapter: AgentAdapter, task: str, root: Path) -> None:
    from rich.table import Table

    config = resolved.config
    table = Table(title="ralphctl run --dry-run", show_lines=False)
    table.add_column("setting")
    table.add_column("value")
    table.add_column("from", style="dim")
    for field, value in config.to_json().items():
        table.add_row(field, json.dumps(value), resolved.sources.get(field, "default"))
    console.print(table)
    prompt = build_prompt(
        PromptContext(
            task=task,
            iteration=1,
            max_iterations=config.max_iterations,
            remaining=remaining(Totals(), config.budgets),
            marker=config.marker,
        )
    )
    request = agent_request(
        config,
        prompt=prompt,
        workdir=root,
        iteration=1,
        session_id="<new uuid per iteration>",
        remaining_cost_usd=config.max_cost_usd,
    )
    try:
        command = adapter.build_command(request)
    except ValueError as exc:
        fail(str(exc), EXIT_USAGE)
    console.print(f"[bold]workdir[/] {root}")
    console.print(f"[bold]command[/] {shlex.join(command.argv)}", soft_wrap=True)
    for key, value in command.env.items():
        console.print(f"[bold]env[/] {key}={value}")
    console.rule("prompt of iteration 1 (on the agent's stdin)")
    console.out(prompt, highlight=False)


def _with_config(loop: LoopRecord, config: LoopConfig) -> LoopRecord:
    return replace(loop, config=config.to_json())


def _summary_json(loop: LoopRecord) -> dict[str, Any]:
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
