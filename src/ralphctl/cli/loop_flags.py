"""The flags that start a loop, declared once for `ralphctl run` and `ralphctl loops start`,
and what they make: a ``LoopRequest`` for the loop-start service (``engine/starting``)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from ralphctl.cli.common import UsageError
from ralphctl.domain.markers import promise
from ralphctl.engine.starting import FreshOnlySettings, InvalidSpec, LoopRequest

TASK_ARG = typer.Argument(None, metavar="[TASK]", help="The task, as text.")
TASK = typer.Option(None, "--task", "-t", help="The task, as text.")
TASK_FILE = typer.Option(None, "--task-file", "-f", help="Read the task here.")
WORKDIR = typer.Option(Path("."), "--workdir", "-C", help="Where the agent works.")
AGENT = typer.Option(
    None,
    "--agent",
    "-a",
    help="Agent adapter: claude (default), codex, gemini, opencode, copilot, aider, amp, "
    "cursor, command, scripted (`ralphctl agents list`).",
)
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
COOLDOWN = typer.Option(
    None,
    "--cooldown",
    help="Pause from one agent's exit to the next one's start, e.g. 5s (5s).",
)
CHECKPOINT = typer.Option(None, "--checkpoint-interval", help="Git checkpoint every N (5).")
ITERATION_TIMEOUT = typer.Option(None, "--iteration-timeout", help="Per-iteration limit (1h).")
PERMISSION = typer.Option(
    None, "--permission-mode", help="The agent's permission mode (acceptEdits)."
)
SCRIPT = typer.Option(None, "--script", help="Script file for the scripted agent.")
AGENT_COMMAND = typer.Option(
    None,
    "--agent-command",
    help="The command agent's command line; the prompt on stdin, or in {prompt} or "
    "{prompt_file} (docs/agents/command.md).",
)
AGENT_TOKENS_REGEX = typer.Option(
    None,
    "--agent-tokens-regex",
    help="The command agent's token counts: a regex with (?P<input>…) and/or (?P<output>…).",
)
AGENT_COST_REGEX = typer.Option(
    None, "--agent-cost-regex", help="The command agent's cost in USD: a regex with (?P<cost>…)."
)
ISOLATE_AGENT_CONFIG = typer.Option(
    None,
    "--isolate-agent-config/--no-isolate-agent-config",
    help="Run the agent without your own plugins, hooks and MCP servers (credentials kept).",
)
INSTALL_AGENT = typer.Option(
    None,
    "--install-agent",
    help="Install the agent's pinned CLI for ralphctl if it is missing (auto_install).",
)
SANDBOX = typer.Option(
    None,
    "--sandbox/--no-sandbox",
    help="Run the agent under bubblewrap: only the work dir and its own config writable, "
    "your secrets hidden (docs/safety.md).",
)
SANDBOX_NET = typer.Option(
    None,
    "--sandbox-net",
    help="The sandbox's network: allow (default), or none (not even the host's 127.0.0.1).",
)
ON_QUESTION = typer.Option(
    None,
    "--on-question",
    help="When the agent asks you something: continue (a safe default, the default) or wait "
    "for your answer (`ralphctl tell`).",
)
QUESTION_TIMEOUT = typer.Option(
    None,
    "--question-timeout",
    help="With --on-question wait: how long to wait for an answer, e.g. 30m (the default).",
)
CLEAR_CONTEXT = typer.Option(
    None,
    "--clear-context",
    help="With --mode hook, Gemini only: each block also clears the model's memory (the "
    "tracker holds the task).",
)
WORKFLOW = typer.Option(
    None, "--workflow", "-w", help="Run an installed workflow; the task is its input."
)
GATE = typer.Option(
    None, "--gate", help="A command that must pass before completion counts (repeatable)."
)
MAX_CALLS_PER_HOUR = typer.Option(
    None, "--max-calls-per-hour", help="Agent calls per hour for this loop (no limit)."
)
CHECKPOINT_BRANCH = typer.Option(
    None, "--checkpoint-branch", help="Commit checkpoints to this branch, not HEAD's."
)
NAME = typer.Option(None, "--name", help="A name for the loop.")
MODE = typer.Option(
    "fresh",
    "--mode",
    help="fresh: a new agent session per iteration; hook: one Claude Code session, "
    "kept going by a Stop hook (docs/hook-mode.md).",
)
DRY_RUN = typer.Option(
    False, "--dry-run", help="Print the configuration and the agent command; run nothing."
)
DB = typer.Option(None, "--db", help="Database URL or SQLite path (env RALPHCTL_DB).")
QUIET = typer.Option(False, "--quiet", "-q", help="Print only the final summary.")
JSON = typer.Option(False, "--json", help="Print the final summary as JSON.")

#: Each flag and the loop setting it gives (flags left out are None and skipped).
_SETTING_OF_FLAG = {
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
    "agent_tokens_regex": "agent_tokens_regex",
    "agent_cost_regex": "agent_cost_regex",
    "isolate_agent_config": "isolate_agent_config",
    "install_agent": "auto_install",
    "sandbox": "sandbox",
    "sandbox_net": "sandbox_net",
    "on_question": "on_question",
    "question_timeout": "question_timeout",
    "clear_context": "clear_context",
}
#: How a setting is given on the command line, for messages.
FLAG_OF_SETTING = {
    **{setting: "--" + flag.replace("_", "-") for flag, setting in _SETTING_OF_FLAG.items()},
    "gates": "--gate",
    "script": "--script",
    "agent_args": "--agent-args",
    "agent_command": "--agent-command",
}


def loop_request(flags: Mapping[str, Any]) -> LoopRequest:
    """The request a start command's flags (its ``locals()``) make."""
    return LoopRequest(
        task=task_text(flags.get("task_arg"), flags.get("task"), flags.get("task_file")),
        workdir=Path(flags["workdir"]).expanduser().absolute(),  # resolved by the service
        settings=loop_settings(flags),
        name=flags.get("name"),
        mode=flags.get("mode", "fresh"),
        workflow=flags.get("workflow"),
        worktree=flags.get("worktree", False),
    )


def loop_settings(flags: Mapping[str, Any]) -> dict[str, Any]:
    """The loop settings the flags give (LoopConfig field names; none for flags left out)."""
    values = {
        setting: flags[flag]
        for flag, setting in _SETTING_OF_FLAG.items()
        if flags.get(flag) is not None
    }
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
        values.setdefault("agent", "scripted")
    if flags.get("agent_command") is not None:
        values["agent_command"] = flags["agent_command"]
        values.setdefault("agent", "command")
    return values


def task_text(positional: str | None, task: str | None, task_file: Path | None) -> str:
    """The task, given exactly once: as TASK, --task TEXT or --task-file PATH."""
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


def usage_error(exc: InvalidSpec) -> UsageError:
    """The service's refusal in the command line's words (flags, not setting names)."""
    if isinstance(exc, FreshOnlySettings):
        flags = ", ".join(FLAG_OF_SETTING.get(name, name) for name in exc.names)
        return UsageError(f"{flags}: not available with --mode hook (one session)")
    return UsageError(str(exc))
