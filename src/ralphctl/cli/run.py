"""`ralphctl run` and `ralphctl resume`: run a loop in the foreground."""

from __future__ import annotations

from pathlib import Path

import typer

from ralphctl.cli import loop_flags as flag
from ralphctl.cli.foreground import check_agent, plan_or_exit, print_plan, resume_here, run_here

DB = flag.DB  # `rollback` and `resume` name the database as `run` does


def run_command(
    task_arg: str | None = flag.TASK_ARG,
    task: str | None = flag.TASK,
    task_file: Path | None = flag.TASK_FILE,
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
    workdir: Path = flag.WORKDIR,
    workflow: str | None = flag.WORKFLOW,
    gate: list[str] | None = flag.GATE,
    max_calls_per_hour: int | None = flag.MAX_CALLS_PER_HOUR,
    checkpoint_branch: str | None = flag.CHECKPOINT_BRANCH,
    name: str | None = flag.NAME,
    mode: str = flag.MODE,
    db: str | None = DB,
    dry_run: bool = flag.DRY_RUN,
    quiet: bool = flag.QUIET,
    json_out: bool = flag.JSON,
) -> None:
    """Run an agent in a loop until the task is done or a budget says stop.

    Exit codes: 0 completed, 1 a limit (or paused), 2 bad arguments or configuration,
    3 failed (circuit breaker, agent missing), 4 blocked, 130 interrupted.
    """
    plan = plan_or_exit(flag.loop_request(locals()))
    if dry_run:
        print_plan(plan)
        return
    check_agent(plan)
    raise typer.Exit(run_here(plan, db, quiet=quiet, json_out=json_out))


def resume_command(
    loop_id: str = typer.Argument(..., help="The loop's id (or a unique prefix)."),
    max_iterations: int | None = flag.MAX_ITERATIONS,
    max_runtime: str | None = flag.MAX_RUNTIME,
    max_cost: float | None = flag.MAX_COST,
    max_tokens: int | None = flag.MAX_TOKENS,
    cooldown: str | None = flag.COOLDOWN,
    iteration_timeout: str | None = flag.ITERATION_TIMEOUT,
    db: str | None = DB,
    quiet: bool = flag.QUIET,
    json_out: bool = flag.JSON,
) -> None:
    """Continue a paused, stopped, failed, blocked or crashed loop with its totals intact
    (a hook-mode loop: a paused one, in the same Claude Code session).

    Budgets may be raised with the same flags as `run`; everything else is as stored.
    """
    raise typer.Exit(resume_here(loop_id, flag.loop_settings(locals()), db, quiet, json_out))
