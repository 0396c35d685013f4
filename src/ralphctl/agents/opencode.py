"""OpenCode: the ``opencode run --format json`` command line of one iteration.

Facts this module relies on (opencode-ai 1.18.33, docs/agents/opencode.md):
- ``opencode run`` reads the prompt from stdin when stdin is not a terminal (appended to any
  message words on argv, of which we pass none); ``--format json`` prints one JSON event a
  line (``opencode_stream``); each run is a new session unless ``--session <id>`` is given
  (ids are opencode's own, ``ses_…``); ``--continue`` takes the most recent session.
- Permissions are rules (``allow``/``ask``/``deny``) from its config or ``$OPENCODE_PERMISSION``
  (JSON, merged over the config); headless, an ``ask`` is auto-rejected (and the run ends
  there); ``--auto`` approves every ``ask`` instead; the ``plan`` agent denies edits. A tool
  denied for every pattern is not offered to the model at all.
- ``--pure`` loads no external plugins; its global config is ``$XDG_CONFIG_HOME/opencode``,
  its credentials ``$XDG_DATA_HOME/opencode/auth.json``.
- No hook mode (``NO_HOOK_MODE_REASON``): ``opencode run`` exits when its session first goes
  idle, so the follow-up prompt of ralphctl's plugin is never answered (measured with the
  real CLI, tests/agents/opencode/test_opencode_plugin.py); ``opencode serve`` and the TUI
  keep the session going.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ralphctl.agents.argv import given_flags, option_value
from ralphctl.agents.base import AgentCommand, AgentRequest, Capabilities, StreamParser
from ralphctl.agents.executables import agents_home, command_name, require_executable
from ralphctl.agents.spec import AgentSpec, Configuration, Package, credential_in_env

if TYPE_CHECKING:
    from ralphctl.agents.opencode_stream import OpencodeStreamParser

BIN_ENV = "RALPHCTL_OPENCODE_BIN"
PACKAGE = Package("npm", "opencode-ai", "1.18.33", "opencode")
INSTALL_HINT = (
    "install it with `ralphctl agents install opencode`, "
    f"or set {BIN_ENV} to the path of the `opencode` executable"
)
PERMISSION_ENV = "OPENCODE_PERMISSION"
OUTPUT_TOKENS_ENV = "OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX"
#: ``$OPENCODE_PERMISSION`` rules per neutral mode. The user's own ``$OPENCODE_PERMISSION``
#: rules are kept before them; opencode lets the last matching rule win, so the mode's do.
MODE_RULES: Mapping[str, Mapping[str, str]] = {
    "default": {},
    "acceptEdits": {"edit": "allow"},
    # the plan agent refuses edits itself (the tools stay offered, a call is refused and the
    # run goes on); shell commands, which could write, are asked for: refused headless
    "plan": {"bash": "ask"},
    "bypassPermissions": {},
}
NO_HOOK_MODE_REASON = (
    "`opencode run` exits as soon as its session goes idle, before the follow-up prompt of"
    " ralphctl's plugin is answered; use `ralphctl plugin install --agent opencode` and"
    " /ralph-loop in the OpenCode TUI (or a session of `opencode serve`) instead"
)
OPENCODE_CAPABILITIES = Capabilities(
    fresh=True,
    resume=True,
    reports_cost=True,
    reports_tokens=True,
    structured_stream=True,
    permission_modes=frozenset(MODE_RULES),
    no_hook_mode_reason=NO_HOOK_MODE_REASON,
)
#: What an isolated run sets: no global config dir (``XDG_CONFIG_HOME`` points at an empty
#: one), no extra config dir, no Claude Code files (``~/.claude``), no external skills.
ISOLATION_ENV = {
    "OPENCODE_CONFIG_DIR": "",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
}

_AUTO_FLAGS = frozenset({"--auto", "--yolo", "--dangerously-skip-permissions"})
_CONTINUE_FLAGS = frozenset({"--continue", "-c"})
_SESSION_FLAGS = frozenset({"--session", "-s"})
_MODEL_FLAGS = frozenset({"--model", "-m"})


class OpencodeAdapter:
    """Runs OpenCode headless: ``opencode run --format json`` with the prompt on stdin."""

    name: str = "opencode"
    capabilities: Capabilities = OPENCODE_CAPABILITIES

    def __init__(self) -> None:
        self._model: str | None = None

    def check_available(self) -> None:
        require_executable("opencode", BIN_ENV, "OpenCode CLI", INSTALL_HINT)

    def build_command(self, request: AgentRequest) -> AgentCommand:
        """The argv, stdin and environment of one iteration (see the module docstring).

        The user's ``extra_args`` win over ours for the model, agent, session and ``--auto``;
        ``--continue`` is refused and ``--format`` may only repeat ``json``.
        """
        extra = list(request.extra_args)
        flags = given_flags(extra)
        _refuse_conflicts(extra, flags)
        mode = request.permission_mode
        if mode not in MODE_RULES:
            raise ValueError(f"the opencode agent has no permission mode {mode!r}")
        argv = [command_name("opencode", BIN_ENV), "run"]
        argv += [] if "--format" in flags else ["--format", "json"]
        if request.model is not None and not flags & _MODEL_FLAGS:
            argv += ["--model", request.model]
        if mode == "plan" and "--agent" not in flags:
            argv += ["--agent", "plan"]
        if mode == "bypassPermissions" and not flags & _AUTO_FLAGS:
            argv.append("--auto")
        if request.resume and not flags & _SESSION_FLAGS:
            argv += ["--session", _session_id(request.session_id)]
        if request.isolate_config and "--pure" not in flags:
            argv.append("--pure")
        argv += extra
        self._model = option_value(extra, *_MODEL_FLAGS) or request.model
        env = _environment(request, os.environ.get(PERMISSION_ENV))
        return AgentCommand(argv=argv, stdin=request.prompt.encode("utf-8"), env=env)

    def new_parser(self) -> StreamParser:
        """A parser for the next run: it names the tokens with the model last asked for."""
        return parser_class()(self._model)


def isolated_config_home() -> Path:
    """The ``XDG_CONFIG_HOME`` of an isolated run: an empty folder of ralphctl's own."""
    return agents_home() / "opencode" / "isolated-config"


def permission_rules(mode: str, users: str | None) -> str | None:
    """``$OPENCODE_PERMISSION`` for ``mode``: the user's own rules (JSON in their
    environment) first, the mode's last (they win); None when the mode sets nothing."""
    ours = MODE_RULES[mode]
    if not ours:
        return None
    try:
        theirs = json.loads(users) if users else {}
    except ValueError:
        theirs = {}
    kept = {k: v for k, v in theirs.items() if k not in ours} if isinstance(theirs, dict) else {}
    return json.dumps({**kept, **ours}, separators=(",", ":"))


def _environment(request: AgentRequest, users_rules: str | None) -> dict[str, str]:
    env: dict[str, str] = {}
    rules = permission_rules(request.permission_mode, users_rules)
    if rules is not None:
        env[PERMISSION_ENV] = rules
    if request.max_output_tokens is not None:
        env[OUTPUT_TOKENS_ENV] = str(request.max_output_tokens)
    if request.isolate_config:
        env["XDG_CONFIG_HOME"] = str(isolated_config_home())
        env.update(ISOLATION_ENV)
    return env


def _refuse_conflicts(extra: Sequence[str], flags: set[str]) -> None:
    if flags & _CONTINUE_FLAGS:
        raise ValueError(
            "--continue is not allowed: it resumes the most recent session, which may belong "
            "to someone else; use --session <id>"
        )
    output_format = option_value(extra, "--format")
    if "--format" in flags and output_format != "json":
        raise ValueError(
            f"--format {output_format or ''} is not supported: ralphctl reads opencode's json "
            "events, so leave --format out"
        )


def _session_id(session_id: str) -> str:
    if not session_id.startswith("ses_"):
        raise ValueError(
            f"cannot resume opencode session {session_id!r}: opencode resumes only the "
            "sessions it created (ids starting with ses_)"
        )
    return session_id


# --- configured: offline, from the environment and its files -------------------------------

#: Environment variables that give opencode a provider's credentials.
CREDENTIAL_ENV = (
    "OPENCODE_API_KEY",
    "OPENCODE_AUTH_CONTENT",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENERATIVE_AI_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "XAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "MISTRAL_API_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
    "GITHUB_TOKEN",
)


def configured(env: Mapping[str, str], home: Path) -> Configuration:
    """A provider key in the environment, credentials stored by ``opencode providers login``
    (``auth.json``), or a ``provider`` section in its config (``$OPENCODE_CONFIG`` or the
    global ``opencode.json[c]``)."""
    if found := credential_in_env(env, CREDENTIAL_ENV):
        return found
    data_home = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else home / ".local/share"
    auth = data_home / "opencode" / "auth.json"
    providers = _auth_providers(auth)
    if providers:
        return Configuration(True, f"logged in to {', '.join(providers)} ({auth})")
    for config in _config_files(env, home):
        if _declares_providers(config):
            return Configuration(True, f"provider configured in {config}")
    return Configuration(
        False,
        "no credentials found: run `opencode providers login`, set a provider's API key "
        "(e.g. $OPENAI_API_KEY), or declare a provider in opencode.json",
    )


def _auth_providers(path: Path) -> list[str]:
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return sorted(str(name) for name in stored) if isinstance(stored, dict) else []


def _config_files(env: Mapping[str, str], home: Path) -> list[Path]:
    config_home = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    found = [Path(env["OPENCODE_CONFIG"])] if env.get("OPENCODE_CONFIG") else []
    found += [config_home / "opencode" / name for name in ("opencode.json", "opencode.jsonc")]
    return found


def _declares_providers(path: Path) -> bool:
    """The file has a top-level ``provider`` key (comments allowed, as in JSONC)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        parsed = json.loads(text)
    except ValueError:
        return '"provider"' in text
    return isinstance(parsed, dict) and bool(parsed.get("provider"))


@functools.cache
def parser_class() -> type[OpencodeStreamParser]:
    """The stream parser, imported once a run has printed its first line (start-up)."""
    from ralphctl.agents.opencode_stream import OpencodeStreamParser

    return OpencodeStreamParser


def new_parser() -> StreamParser:
    """A parser of a run with no details known (recorded streams, benchmarks)."""
    return parser_class()()


SPEC = AgentSpec(
    name="opencode",
    summary="OpenCode (opencode run --format json)",
    make=lambda _options: OpencodeAdapter(),
    parser=new_parser,
    capabilities=OPENCODE_CAPABILITIES,
    executable="opencode",
    bin_env=BIN_ENV,
    package=PACKAGE,
    configured=configured,
    # its config, login (auth.json), sessions, state and cache (docs/agents/opencode.md)
    sandbox_paths=(
        ".config/opencode/",
        ".local/share/opencode/",
        ".local/state/opencode/",
        ".cache/opencode/",
        "$XDG_CONFIG_HOME/opencode/",
        "$XDG_DATA_HOME/opencode/",
        "$XDG_STATE_HOME/opencode/",
        "$XDG_CACHE_HOME/opencode/",
        "$OPENCODE_CONFIG_DIR/",
        "$OPENCODE_CONFIG",
    ),
)
