"""Claude Code: the ``claude -p`` command line of one iteration.

``-p --output-format stream-json`` needs ``--verbose`` (CLI 2.1.330, see
research/claude-protocol.md §3); the prompt goes on stdin. The stream is parsed by
``agents/claude_stream``, imported with a run's first line.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ralphctl.agents.argv import given_flags, option_value
from ralphctl.agents.base import (
    AgentCommand,
    AgentRequest,
    Capabilities,
    StopHook,
    StreamParser,
)
from ralphctl.agents.claude_plugins import config_dir, installed_plugins, resolve_plugins
from ralphctl.agents.claude_session import session_tokens
from ralphctl.agents.executables import command_name, require_executable
from ralphctl.agents.spec import AgentSpec, Configuration, Package, credential_in_env

if TYPE_CHECKING:
    from ralphctl.agents.claude_stream import ClaudeStreamParser

BIN_ENV = "RALPHCTL_CLAUDE_BIN"
INSTALL_HINT = (
    "install it with `npm install -g @anthropic-ai/claude-code`, "
    f"or set {BIN_ENV} to the path of the `claude` executable"
)
PERMISSION_MODES = frozenset(
    {"default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions"}
)
CLAUDE_CAPABILITIES = Capabilities(
    fresh=True,
    same_session=True,
    resume=True,
    reports_cost=True,
    reports_tokens=True,
    structured_stream=True,
    permission_modes=PERMISSION_MODES,
    plugins=True,
)
#: ``isolate_agent_config``: the settings files read. Leaving out ``user`` drops the user's own
#: hooks, plugins and MCP servers (``~/.claude.json`` ones too, checked with 2.1.330); the
#: project's, the run's ``--settings`` layer and the credentials stay (docs/agents/isolation.md).
ISOLATED_SETTING_SOURCES = "project,local"
#: Claude Code ends a turn by itself after this many blocking Stop hooks in a row (default 8).
BLOCK_CAP_ENV = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"

_PERMISSION_FLAGS = frozenset({"--permission-mode", "--dangerously-skip-permissions"})
_SESSION_FLAGS = frozenset({"--session-id", "--resume", "-r"})
_CONTINUE_FLAGS = frozenset({"--continue", "-c"})
#: What a same-session run sets itself: the user's arguments may not take these away.
_SAME_SESSION_FLAGS = frozenset({"--settings", *_SESSION_FLAGS})


class ClaudeAdapter:
    """Runs Claude Code headless: ``claude -p --output-format stream-json --verbose``."""

    name: str = "claude"
    capabilities: Capabilities = CLAUDE_CAPABILITIES

    def check_available(self) -> None:
        require_executable("claude", BIN_ENV, "Claude Code CLI", INSTALL_HINT)

    def build_command(self, request: AgentRequest) -> AgentCommand:
        """The argv, stdin and environment of one iteration.

        The user's ``extra_args`` win over ours for permissions, session, budget and (with
        ``isolate_config``) setting-source flags;
        ``--continue`` is refused and ``--output-format`` may only repeat ``stream-json``.
        A ``stop_hook`` (same-session mode) is added as a ``--settings`` layer for this session
        only; the session and settings flags are then ours alone.
        """
        extra = list(request.extra_args)
        flags = given_flags(extra)
        if flags & _CONTINUE_FLAGS:
            raise ValueError(
                "--continue is not allowed: it resumes the most recent session in the "
                "directory, which may belong to someone else; use --resume <session-id>"
            )
        if request.stop_hook is not None and (taken := sorted(flags & _SAME_SESSION_FLAGS)):
            raise ValueError(
                f"{' '.join(taken)}: a same-session loop sets the session and its settings itself"
            )
        output_format = option_value(extra, "--output-format")
        if "--output-format" in flags and output_format != "stream-json":
            raise ValueError(
                f"--output-format {output_format or ''} is not supported: ralphctl reads the "
                "agent's stream-json output, so leave --output-format out"
            )
        argv = [command_name("claude", BIN_ENV)]
        argv += [] if flags & {"-p", "--print"} else ["-p"]
        argv += [] if "--output-format" in flags else ["--output-format", "stream-json"]
        argv += [] if "--verbose" in flags else ["--verbose"]
        if not flags & _PERMISSION_FLAGS:
            argv += ["--permission-mode", request.permission_mode]
        if request.resume:
            argv += ["--resume", request.session_id]
        elif not flags & _SESSION_FLAGS:
            argv += ["--session-id", request.session_id]
        if request.remaining_cost_usd is not None and "--max-budget-usd" not in flags:
            argv += ["--max-budget-usd", _usd(request.remaining_cost_usd)]
        if request.model is not None and "--model" not in flags:
            argv += ["--model", request.model]
        if request.isolate_config and "--setting-sources" not in flags:
            argv += ["--setting-sources", ISOLATED_SETTING_SOURCES]
        argv += extra
        env = {"RALPHCTL_ITERATION": str(request.iteration)}
        plugins = _plugins(request.plugins, flags)
        if request.stop_hook is not None or plugins:
            argv += ["--settings", settings_layer(request.stop_hook, plugins)]
        if request.stop_hook is not None:
            env[BLOCK_CAP_ENV] = block_cap(
                request.stop_hook.max_blocks, os.environ.get(BLOCK_CAP_ENV)
            )
        if request.max_output_tokens is not None:
            env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(request.max_output_tokens)
        if os.geteuid() == 0 and _bypasses_permissions(extra, flags, request.permission_mode):
            env["IS_SANDBOX"] = "1"  # as root, the CLI refuses bypassPermissions without it
        return AgentCommand(argv=argv, stdin=request.prompt.encode("utf-8"), env=env)

    def new_parser(self) -> StreamParser:
        return new_parser()


@functools.cache
def parser_class() -> type[ClaudeStreamParser]:
    """The stream parser, imported once a run has printed its first line (start-up)."""
    from ralphctl.agents.claude_stream import ClaudeStreamParser

    return ClaudeStreamParser


def new_parser() -> StreamParser:
    return parser_class()()


def settings_layer(hook: StopHook | None, plugins: tuple[str, ...] = ()) -> str:
    """The ``--settings`` JSON of a run: a same-session run's Stop hook with the plugins that
    would run it again off, and the loop's plugins on."""
    settings: dict[str, Any] = {"enabledPlugins": dict.fromkeys(plugins, True)}
    if hook is not None:
        group = {"hooks": [{"type": "command", "command": hook.command, "timeout": hook.timeout_s}]}
        settings["hooks"] = {"Stop": [group]}
        settings["enabledPlugins"] |= dict.fromkeys(hook.disabled_plugins, False)
    return json.dumps(settings, separators=(",", ":"))


def _plugins(names: Sequence[str], flags: set[str]) -> tuple[str, ...]:
    """The ids of the plugins a run enables (docs/workflows.md); PluginNotInstalled for a
    missing one."""
    if not names:
        return ()
    if "--settings" in flags:
        raise ValueError(
            "--settings: ralphctl enables the loop's plugins with its own settings layer; "
            "leave --settings out of the agent arguments"
        )
    return resolve_plugins(names, installed_plugins(config_dir()))


def block_cap(needed: int, configured: str | None) -> str:
    """A block cap of at least ``needed``; a higher (or ``0``: none) value already in the
    environment is kept."""
    try:
        current = int(configured or "")
    except ValueError:
        return str(needed)
    return str(current) if current == 0 or current >= needed else str(needed)


def _bypasses_permissions(extra: Sequence[str], flags: set[str], requested: str) -> bool:
    if "--dangerously-skip-permissions" in flags:
        return True
    mode = option_value(extra, "--permission-mode") if "--permission-mode" in flags else requested
    return mode == "bypassPermissions"


def _usd(amount: float) -> str:
    """A budget rounded down to 1/10000 USD, so the CLI is never allowed more than is left.

    The CLI checks its budget after each answer, so one answer can still overshoot it.
    """
    return f"{math.floor(max(amount, 0.0) * 10_000) / 10_000:.4f}"


def _configured(env: Mapping[str, str], home: Path) -> Configuration:
    """An API key or token in the environment, a cloud provider selected, or the credentials
    ``claude /login`` stores."""
    if found := credential_in_env(env, _CREDENTIAL_ENV):
        return found
    directory = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
    credentials = directory / ".credentials.json"
    if credentials.is_file():
        return Configuration(True, f"logged in ({credentials})")
    return Configuration(False, "not logged in: run `claude /login` or set $ANTHROPIC_API_KEY")


_CREDENTIAL_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
)

SPEC = AgentSpec(
    name="claude",
    summary="Claude Code (claude -p, stream-json)",
    make=lambda _options: ClaudeAdapter(),
    parser=new_parser,
    capabilities=CLAUDE_CAPABILITIES,
    executable="claude",
    bin_env=BIN_ENV,
    package=Package("npm", "@anthropic-ai/claude-code", "2.1.330", "claude"),
    configured=_configured,
    session_tokens=session_tokens,
    # its settings, sessions and credentials (~/.claude/.credentials.json), and its state file
    sandbox_paths=(".claude/", ".claude.json", "$CLAUDE_CONFIG_DIR/"),
)
