"""GitHub Copilot CLI: the command line of one iteration (the parser is in ``copilot_stream``).

Facts this module relies on (CLI 1.0.102, docs/agents/copilot.md):
- Without ``-p``, a piped stdin is the prompt and the run is non-interactive (exits after
  the answer); ``--output-format json`` prints JSON lines, ``-s`` leaves out the stats.
- ``--session-id <uuid>`` names a new session; ``--resume <id>`` continues one.
- Permissions: ``--allow-all-tools`` (every tool, paths limited to the work dir and the temp
  dir), ``--allow-all`` (tools, paths and URLs), ``--deny-tool KIND`` (``write``: file-editing
  tools, ``shell``: every shell command; a denial wins over every allow). Without an allow
  flag, a tool that needs approval is denied ("no interactive user response").
- The stream has no token counts: ``--usage-output-file FILE`` makes the CLI write the
  session's usage there (atomically: a temp file renamed over FILE) before its ``result``
  line; the parser reads it when the run ends. A resumed session's file totals all its runs,
  so what its record showed before the run is taken off. No cost in USD (GitHub bills
  premium requests / AI credits; a BYOK provider's cost is 0): the engine prices the tokens.
- ``$COPILOT_HOME`` (default ``~/.copilot``) holds the user's settings, MCP servers, hooks,
  agents, skills, plugins, session state and, without a system keychain, the login token
  (``config.json``).
- Same-session (hook) mode: ``AgentRequest.stop_hook`` becomes an ``agentStop`` hook file
  (``copilot_hooks``) in a home of ralphctl's own (``copilot_home``), which fires headless;
  its block sends the reason to the model as the next prompt of the same process and
  session. A session the CLI ended (after its 9th block in a row, or an error) is continued
  with ``--resume <id>``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ralphctl.agents.argv import given_flags, option_value
from ralphctl.agents.base import AgentCommand, AgentRequest, Capabilities, StopHook, StreamParser
from ralphctl.agents.copilot_home import hooked_home, set_run_hook
from ralphctl.agents.copilot_hooks import FORMAT_ARGS, hook_file
from ralphctl.agents.copilot_session import HOME_ENV, copilot_home, session_tokens
from ralphctl.agents.executables import command_name, require_executable
from ralphctl.agents.private_dirs import run_file
from ralphctl.agents.spec import AgentSpec, Configuration, Package, credential_in_env
from ralphctl.domain.model import ModelTokens

if TYPE_CHECKING:
    from ralphctl.agents.copilot_stream import CopilotStreamParser

BIN_ENV = "RALPHCTL_COPILOT_BIN"
PACKAGE = Package("npm", "@github/copilot", "1.0.102", "copilot")
INSTALL_HINT = (
    "install it with `ralphctl agents install copilot`, "
    f"or set {BIN_ENV} to the path of the `copilot` executable"
)
#: The neutral permission modes and the Copilot flags that express them. ``plan`` is
#: read-only: every tool allowed but file edits and shell commands (which could write).
MODE_FLAGS: Mapping[str, tuple[str, ...]] = {
    "default": (),
    "acceptEdits": ("--allow-all-tools",),
    "plan": ("--allow-all-tools", "--deny-tool=write", "--deny-tool=shell"),
    "bypassPermissions": ("--allow-all",),
}
COPILOT_CAPABILITIES = Capabilities(
    fresh=True,
    same_session=True,
    resume=True,
    reports_tokens=True,
    structured_stream=True,
    permission_modes=frozenset(MODE_FLAGS),
)
#: What an isolated home gets from the user's: the login (and a plaintext token, if any).
CREDENTIAL_FILES = ("config.json",)
#: Environment variables that give the CLI a model without a login: a token or a BYOK provider.
CREDENTIAL_ENV = ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN")
BYOK_ENV = "COPILOT_PROVIDER_BASE_URL"

_PERMISSION_FLAGS = frozenset(
    {
        "--allow-all-tools",
        "--allow-all",
        "--yolo",
        "--allow-tool",
        "--deny-tool",
        "--plan",
        "--mode",
        "--autopilot",
    }
)
_SESSION_FLAGS = frozenset({"--session-id", "--resume", "-r"})
#: The home of hook-mode runs with the user's configuration (never a work dir's hash).
HOOKED = "hooked"

_PROMPT_FLAGS = frozenset({"-p", "--prompt", "-i", "--interactive"})


class CopilotAdapter:
    """Runs the Copilot CLI headless: ``copilot --output-format json -s --no-ask-user``, the
    prompt on stdin."""

    name: str = "copilot"
    capabilities: Capabilities = COPILOT_CAPABILITIES

    def __init__(self) -> None:
        self._usage_file: Path | None = None
        self._earlier: tuple[ModelTokens, ...] = ()

    def check_available(self) -> None:
        require_executable("copilot", BIN_ENV, "GitHub Copilot CLI", INSTALL_HINT)

    def build_command(self, request: AgentRequest) -> AgentCommand:
        """The argv, stdin (the prompt) and environment of one iteration.

        The user's ``extra_args`` win over ours for permissions, the session, the model and
        the usage file; ``--continue`` and a prompt flag are refused, and ``--output-format``
        may only repeat ``json``. With ``isolate_config`` the CLI runs with a home of its own
        for the work dir (``isolated_home``). A ``stop_hook`` (same-session mode) is added to
        the home the run uses (``copilot_home``); the session flags are then ours alone.
        """
        extra = list(request.extra_args)
        flags = given_flags(extra)
        _refuse(extra, flags)
        if request.stop_hook is not None and (taken := sorted(flags & _SESSION_FLAGS)):
            raise ValueError(f"{' '.join(taken)}: a same-session loop sets the session itself")
        argv = [command_name("copilot", BIN_ENV)]
        argv += [] if "--output-format" in flags else ["--output-format", "json"]
        argv += [] if flags & {"-s", "--silent"} else ["-s"]
        argv += [] if "--no-ask-user" in flags else ["--no-ask-user"]
        argv += [] if "--no-auto-update" in flags else ["--no-auto-update"]
        if not flags & _PERMISSION_FLAGS:
            argv += MODE_FLAGS.get(request.permission_mode, ())
        if request.resume:
            argv += ["--resume", request.session_id]
        elif not flags & _SESSION_FLAGS:
            argv += ["--session-id", request.session_id]
        if request.model is not None and "--model" not in flags:
            argv += ["--model", request.model]
        self._usage_file = None
        if "--usage-output-file" not in flags:
            self._usage_file = usage_file(request)
            argv += ["--usage-output-file", str(self._usage_file)]
        argv += extra
        env = {"RALPHCTL_ITERATION": str(request.iteration)}
        home = run_home(request)
        if home is not None:
            env[HOME_ENV] = str(home)
        # The usage file of a resumed session totals all its runs: what came before is taken off.
        self._earlier = session_tokens(request.session_id, home=home) if request.resume else ()
        return AgentCommand(argv=argv, stdin=request.prompt.encode("utf-8"), env=env)

    def new_parser(self) -> StreamParser:
        """A parser for the run last built: it reads that run's usage file when it ends (less
        what a resumed session had used before)."""
        return parser_class()(usage_file=self._usage_file, earlier=self._earlier)


def run_home(request: AgentRequest) -> Path | None:
    """The Copilot home a run uses: the isolated one (with the run's hook file, if any), the
    hooked one for a hook-mode run with the user's configuration, else None (the user's)."""
    hook = None if request.stop_hook is None else run_hook_file(request.stop_hook)
    if request.isolate_config:
        home = isolated_home(request.workdir)
        set_run_hook(home, hook)
        return home
    if hook is not None:
        return hooked_home(homes_root() / HOOKED, copilot_home(), hook)
    return None


def run_hook_file(hook: StopHook) -> str:
    """The hook file of a same-session run: our hook, answering in Copilot's form."""
    return hook_file(shlex.join([*shlex.split(hook.command), *FORMAT_ARGS]), hook.timeout_s)


def homes_root() -> Path:
    """Where runs keep Copilot homes of ralphctl's own: in ralphctl's user data dir."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("ralphctl")) / "copilot-homes"


def usage_file(request: AgentRequest) -> Path:
    """Where the CLI writes a run's usage: next to the run's private prompt file when the
    engine gives one, else in this user's ralphctl temp dir. The folder is created here,
    closed to others (the CLI would create it open to all, which the private folders of
    prompt files and runner sockets must never be)."""
    return run_file(request, f"copilot-usage-{request.session_id}.json")


def isolated_home(workdir: Path, user_home: Path | None = None) -> Path:
    """The Copilot home of isolated runs in ``workdir``: one per work dir under ralphctl's
    data dir (so a resumed session finds its state), holding a copy of the user's login
    (``CREDENTIAL_FILES``) and nothing else of theirs: no settings, MCP servers, hooks,
    agents, skills or plugins. The copy is refreshed at every run."""
    key = hashlib.sha256(str(workdir.resolve()).encode()).hexdigest()[:16]
    folder = homes_root() / key
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    source = user_home or copilot_home()
    for name in CREDENTIAL_FILES:
        if (source / name).is_file():
            shutil.copyfile(source / name, folder / name)
            (folder / name).chmod(0o600)
    return folder


def _refuse(extra: Sequence[str], flags: set[str]) -> None:
    if "--continue" in flags:
        raise ValueError(
            "--continue is not allowed: it resumes the most recent session, which may belong "
            "to someone else; ralphctl names each session itself"
        )
    if taken := sorted(flags & _PROMPT_FLAGS):
        raise ValueError(
            f"{' '.join(taken)}: ralphctl gives the prompt to Copilot on stdin; leave prompt "
            "flags out of the agent arguments"
        )
    output_format = option_value(extra, "--output-format")
    if "--output-format" in flags and output_format != "json":
        raise ValueError(
            f"--output-format {output_format or ''} is not supported: ralphctl reads the "
            "agent's JSON lines, so leave --output-format out"
        )


_LOGIN_KEY = re.compile(r"user|token", re.IGNORECASE)


def _configured(env: Mapping[str, str], home: Path) -> Configuration:
    """A BYOK provider or a GitHub token in the environment, or a ``copilot login`` (its
    ``config.json`` names a user or a token; the token itself may be in the keychain)."""
    if env.get(BYOK_ENV):
        return Configuration(True, f"${BYOK_ENV} is set (bring your own model provider)")
    if found := credential_in_env(env, CREDENTIAL_ENV):
        return found
    config = copilot_home(env, home) / "config.json"
    if any(_LOGIN_KEY.search(key) for key in _config_keys(config)):
        return Configuration(True, f"logged in ({config})")
    return Configuration(
        False,
        f"not logged in: run `copilot login`, set $COPILOT_GITHUB_TOKEN, or set ${BYOK_ENV} "
        "and $COPILOT_MODEL for your own model provider",
    )


def _config_keys(path: Path) -> list[str]:
    """The top-level keys of the CLI's ``config.json`` (JSON with ``//`` comment lines)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        data = json.loads("\n".join(line for line in lines if not line.lstrip().startswith("//")))
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    return [str(key) for key in data] if isinstance(data, dict) else []


@functools.cache
def parser_class() -> type[CopilotStreamParser]:
    """The stream parser, imported once a run has printed its first line (start-up)."""
    from ralphctl.agents.copilot_stream import CopilotStreamParser

    return CopilotStreamParser


def new_parser() -> StreamParser:
    """A parser of a run with no details known (recorded streams, benchmarks)."""
    return parser_class()()


SPEC = AgentSpec(
    name="copilot",
    summary="GitHub Copilot CLI (copilot --output-format json)",
    make=lambda _options: CopilotAdapter(),
    parser=new_parser,
    capabilities=COPILOT_CAPABILITIES,
    executable="copilot",
    bin_env=BIN_ENV,
    package=PACKAGE,
    configured=_configured,
    session_tokens=session_tokens,
    # its home (login, sessions; an isolated run's own) and its unpacked package cache
    sandbox_paths=(
        ".copilot/",
        "$COPILOT_HOME/",
        ".cache/copilot/",
        "$XDG_CACHE_HOME/copilot/",
    ),
)
