"""OpenAI Codex CLI: the ``codex exec --json`` command line of one iteration (the parser is in
``codex_stream``).

Facts this module relies on (CLI 0.169.0, docs/agents/codex.md):
- ``codex exec --json … -`` reads the prompt from stdin (``-``) and prints JSON lines; outside
  a git repository it needs ``--skip-git-repo-check``. Approvals are never asked in ``exec``.
- The sandbox is ``-s read-only|workspace-write|danger-full-access`` (read-only without it,
  unless the user's config says otherwise); ``--dangerously-bypass-approvals-and-sandbox``
  drops both sandbox and approvals.
- ``codex exec [OPTIONS] resume <thread id> -`` continues a session; its own options lack
  ``-s``, so every option goes before ``resume``, where ``exec`` takes them for both.
- ``--ignore-user-config`` skips ``$CODEX_HOME/config.toml`` (MCP servers, profiles, plugin
  and provider settings) but keeps the credentials in ``$CODEX_HOME``; ``--disable hooks`` and
  ``--disable plugins`` turn off the hooks and plugins found elsewhere.
- Same-session (hook) mode: ``AgentRequest.stop_hook`` adds our Stop hook for the run only,
  as ``-c`` overrides with the trust Codex asks of it (``codex_hooks``); Codex runs it at the
  end of every turn, and a block continues the turn with the reason. Codex names its thread
  itself (``thread.started``): hook mode adopts that id (``chooses_session_id``).
- The stream names no model, so the adapter tells the parser which one the run uses (for the
  price table): ``--model`` or the user's ``config.toml`` ``model``. It reports the thread's
  running token total, so for a resumed thread the adapter also tells the parser what the
  thread had used before (``codex_session.thread_totals``).
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ralphctl.agents.argv import given_flags
from ralphctl.agents.base import (
    AgentCommand,
    AgentRequest,
    Capabilities,
    StreamParser,
)
from ralphctl.agents.codex_hooks import session_stop_hook
from ralphctl.agents.codex_session import codex_home, session_tokens, thread_totals
from ralphctl.agents.executables import command_name, require_executable
from ralphctl.agents.spec import AgentSpec, Configuration, Package, credential_in_env
from ralphctl.domain.model import TokenUsage

if TYPE_CHECKING:
    from ralphctl.agents.codex_stream import CodexStreamParser

BIN_ENV = "RALPHCTL_CODEX_BIN"
PACKAGE = Package("npm", "@openai/codex", "0.169.0", "codex")
INSTALL_HINT = (
    "install it with `ralphctl agents install codex`, "
    f"or set {BIN_ENV} to the path of the `codex` executable"
)
#: The neutral permission modes and the Codex flags that express them (``default``: none, so
#: the user's ``sandbox_mode`` or Codex's own read-only sandbox applies).
MODE_FLAGS: Mapping[str, tuple[str, ...]] = {
    "default": (),
    "plan": ("--sandbox", "read-only"),
    "acceptEdits": ("--sandbox", "workspace-write"),
    "bypassPermissions": ("--dangerously-bypass-approvals-and-sandbox",),
}
#: Under ralphctl's ``--sandbox``: Codex's own bubblewrap sandbox cannot be made inside ours
#: as root (``bwrap: setting up uid map: Operation not permitted``: no capability is left to
#: map a user namespace), which fails every command it runs. ``acceptEdits`` then runs Codex
#: with its sandbox off and lets ralphctl's confine it (docs/agents/codex.md); ``plan`` keeps
#: Codex's read-only sandbox, since ours would let it write the work dir.
SANDBOXED_MODE_FLAGS: Mapping[str, tuple[str, ...]] = {
    **MODE_FLAGS,
    "acceptEdits": MODE_FLAGS["bypassPermissions"],
}
CODEX_CAPABILITIES = Capabilities(
    fresh=True,
    same_session=True,
    resume=True,
    chooses_session_id=True,
    reports_tokens=True,
    structured_stream=True,
    permission_modes=frozenset(MODE_FLAGS),
)
#: ``isolate_agent_config``: run without the user's config.toml, hooks and plugins.
ISOLATION_FLAGS = ("--ignore-user-config", "--disable", "hooks", "--disable", "plugins")
#: ... keeping hooks on when the run brings its own Stop hook (hook mode).
HOOKED_ISOLATION_FLAGS = ("--ignore-user-config", "--disable", "plugins")
#: The hook's output format for Codex (``ralphctl-hook stop --format codex``).
HOOK_FORMAT = ("--format", "codex")

_PERMISSION_FLAGS = frozenset(
    {"-s", "--sandbox", "--dangerously-bypass-approvals-and-sandbox", "--approve-for-me"}
)
_MODEL_FLAGS = frozenset({"-m", "--model"})
_RESUME_WORDS = frozenset({"resume", "fork", "review"})


class CodexAdapter:
    """Runs the Codex CLI headless: ``codex exec --json --skip-git-repo-check … -``."""

    name: str = "codex"
    capabilities: Capabilities = CODEX_CAPABILITIES

    def __init__(self) -> None:
        self._model: str | None = None
        self._baseline = TokenUsage()

    def check_available(self) -> None:
        require_executable("codex", BIN_ENV, "Codex CLI", INSTALL_HINT)

    def build_command(self, request: AgentRequest) -> AgentCommand:
        """The argv, stdin (the prompt) and environment of one iteration.

        The user's ``extra_args`` win over ours for the sandbox and the model; they may not
        name a subcommand (``resume``, ``fork``, ``review``): ralphctl picks the session.
        """
        extra = list(request.extra_args)
        flags = given_flags(extra)
        if taken := sorted(_RESUME_WORDS & set(extra)):
            raise ValueError(
                f"{' '.join(taken)}: ralphctl starts or resumes the Codex session itself; "
                "leave subcommands out of the agent arguments"
            )
        argv = [command_name("codex", BIN_ENV), "exec"]
        argv += [] if "--json" in flags else ["--json"]
        argv += [] if "--skip-git-repo-check" in flags else ["--skip-git-repo-check"]
        if request.permission_mode not in MODE_FLAGS:
            raise ValueError(
                f"permission mode {request.permission_mode!r} is not one Codex can express; "
                f"use one of: {', '.join(sorted(MODE_FLAGS))}"
            )
        if not flags & _PERMISSION_FLAGS and not _config_override(extra, "sandbox_mode"):
            modes = SANDBOXED_MODE_FLAGS if request.sandboxed else MODE_FLAGS
            argv += modes[request.permission_mode]
        if request.model is not None and not flags & _MODEL_FLAGS:
            argv += ["--model", request.model]
        hook = request.stop_hook
        if request.isolate_config and "--ignore-user-config" not in flags:
            argv += ISOLATION_FLAGS if hook is None else HOOKED_ISOLATION_FLAGS
        if hook is not None:
            command = shlex.join([*shlex.split(hook.command), *HOOK_FORMAT])
            argv += ["--enable", "hooks", *session_stop_hook(command, hook.timeout_s)]
        argv += extra
        if request.resume:
            argv += ["resume", request.session_id]
        argv.append("-")
        config_dir = None if request.isolate_config else codex_home()
        self._model = run_model(extra, request.model, config_dir)
        self._baseline = thread_totals(request.session_id) if request.resume else TokenUsage()
        env = {"RALPHCTL_ITERATION": str(request.iteration)}
        return AgentCommand(argv=argv, stdin=request.prompt.encode("utf-8"), env=env)

    def new_parser(self) -> StreamParser:
        """A parser for the run last built: it knows the run's model, which the stream omits,
        and what a resumed thread had used before."""
        return parser_class()(model=self._model, baseline=self._baseline)


def run_model(extra: Sequence[str], requested: str | None, config_dir: Path | None) -> str | None:
    """The model a run uses, as far as ralphctl can tell: the user's ``--model``/``-m`` or
    ``-c model=…``, else ralphctl's, else ``model`` in ``config_dir``'s ``config.toml``."""
    for i, arg in enumerate(extra):
        if arg in _MODEL_FLAGS and i + 1 < len(extra):
            return extra[i + 1]
        if arg.startswith("--model="):
            return arg.partition("=")[2]
    if (override := _config_override(extra, "model")) is not None:
        return override
    if requested is not None:
        return requested
    configured = _user_config(config_dir).get("model") if config_dir else None
    return configured if isinstance(configured, str) else None


def _config_override(extra: Sequence[str], key: str) -> str | None:
    """The value of a ``-c KEY=VALUE`` / ``--config KEY=VALUE`` override in ``extra``."""
    for i, arg in enumerate(extra[:-1]):
        if arg in ("-c", "--config"):
            name, _, value = extra[i + 1].partition("=")
            if name.strip() == key:
                return value.strip().strip("\"'")
    return None


def _home_of(env: Mapping[str, str], home: Path) -> Path:
    """``CODEX_HOME`` in ``env``, else ``.codex`` in ``home``."""
    configured = env.get("CODEX_HOME")
    return Path(configured) if configured else home / ".codex"


def _user_config(config_dir: Path) -> dict[str, object]:
    """``config.toml`` of ``config_dir``; empty when missing or unreadable."""
    try:
        text = (config_dir / "config.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    import tomllib  # only for a file there is: most runs have none

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _configured(env: Mapping[str, str], home: Path) -> Configuration:
    """An API key in the environment, a ``codex login``, or a model provider of the user's."""
    if found := credential_in_env(env, ("CODEX_API_KEY", "OPENAI_API_KEY")):
        return found
    config_dir = _home_of(env, home)
    if (config_dir / "auth.json").is_file():
        return Configuration(True, f"logged in ({config_dir / 'auth.json'})")
    provider = _user_config(config_dir).get("model_provider")
    if isinstance(provider, str) and provider != "openai":
        return Configuration(True, f"model provider {provider!r} ({config_dir / 'config.toml'})")
    return Configuration(False, "not logged in: run `codex login` or set $OPENAI_API_KEY")


@functools.cache
def parser_class() -> type[CodexStreamParser]:
    """The stream parser, imported once a run has printed its first line (start-up)."""
    from ralphctl.agents.codex_stream import CodexStreamParser

    return CodexStreamParser


def new_parser() -> StreamParser:
    """A parser of a run with no details known (recorded streams, benchmarks)."""
    return parser_class()()


SPEC = AgentSpec(
    name="codex",
    summary="OpenAI Codex CLI (codex exec --json)",
    make=lambda _options: CodexAdapter(),
    parser=new_parser,
    capabilities=CODEX_CAPABILITIES,
    executable="codex",
    bin_env=BIN_ENV,
    package=PACKAGE,
    configured=_configured,
    session_tokens=session_tokens,
    # its config, login and sessions (docs/agents/codex.md)
    sandbox_paths=(".codex/", "$CODEX_HOME/"),
)
