"""Gemini CLI: the ``gemini --output-format stream-json`` command line of one iteration.

Facts this module relies on (CLI 0.61.0, checked by running it against a mock Gemini API;
docs/agents/gemini.md):

- Without a terminal the CLI runs headless and reads the prompt from stdin (``-p`` would be
  appended to it); ``--output-format stream-json`` prints JSON lines (``gemini_stream``).
- ``--approval-mode default|auto_edit|yolo|plan``. Headless, a tool that would ask for
  approval is not offered to the model at all: ``default`` runs read-only tools only,
  ``auto_edit`` adds the file-editing tools (no shell), ``yolo`` everything, ``plan`` is
  read-only (writes refused by policy).
- An untrusted folder overrides the approval mode to ``default``; ``--skip-trust`` trusts the
  work dir for the run, as the user did by starting a loop in it.
- ``--session-id <uuid>`` starts a session of that id (an id already used exits 42);
  ``--resume <uuid>`` continues it (sessions are kept per work dir).
- The CLI relaunches itself in a second Node process to raise its heap limit (about 1.7 s per
  run); ``GEMINI_CLI_NO_RELAUNCH`` skips that, and is set unless the user's environment has it.
- Same-session (hook) mode: ``AgentRequest.stop_hook`` becomes an ``AfterAgent`` hook in the
  settings of a home of ralphctl's own (``gemini_home.hooked_home``, or the isolated home),
  which fires headless; its ``{"decision": "deny", "reason": R}`` sends R to the model as the
  next prompt of the same process and session, with ``stop_hook_active`` set. A session the
  CLI ended is continued with ``--resume <id>``.
"""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ralphctl.agents.argv import given_flags, option_value
from ralphctl.agents.base import AgentCommand, AgentRequest, Capabilities, StopHook, StreamParser
from ralphctl.agents.executables import command_name, require_executable
from ralphctl.agents.gemini_home import (
    HOME_ENV,
    auth_settings,
    config_dir,
    hooked_home,
    isolated_home,
    user_settings,
)
from ralphctl.agents.gemini_hooks import FORMAT_ARGS, RUN_HOOK_NAME, hook_group
from ralphctl.agents.install import install_hint
from ralphctl.agents.spec import AgentSpec, Configuration, Package

if TYPE_CHECKING:
    from ralphctl.agents.gemini_stream import GeminiStreamParser

NAME = "gemini"
BIN_ENV = "RALPHCTL_GEMINI_BIN"
PACKAGE = Package("npm", "@google/gemini-cli", "0.61.0", "gemini")
#: ralphctl's permission modes → the CLI's ``--approval-mode``.
APPROVAL_MODES: Mapping[str, str] = {
    "default": "default",
    "acceptEdits": "auto_edit",
    "plan": "plan",
    "bypassPermissions": "yolo",
}
CAPABILITIES = Capabilities(
    fresh=True,
    same_session=True,
    resume=True,
    reports_tokens=True,
    structured_stream=True,
    permission_modes=frozenset(APPROVAL_MODES),
)
NO_RELAUNCH_ENV = "GEMINI_CLI_NO_RELAUNCH"
HOOKED = f"{NAME}-hooked"

_APPROVAL_FLAGS = frozenset({"--approval-mode", "--yolo", "-y"})
_SESSION_FLAGS = frozenset({"--session-id", "--resume", "-r", "--session-file"})
_OUTPUT_FLAGS = frozenset({"--output-format", "-o"})
_MODEL_FLAGS = frozenset({"--model", "-m"})
_INTERACTIVE_FLAGS = frozenset({"--prompt-interactive", "-i", "--acp", "--experimental-acp"})


class GeminiAdapter:
    """Runs Gemini CLI headless: ``gemini --output-format stream-json``, prompt on stdin."""

    name: str = NAME
    capabilities: Capabilities = CAPABILITIES

    def check_available(self) -> None:
        hint = (
            f"install it with `{install_hint(NAME)}`, "
            f"or set {BIN_ENV} to the path of the `gemini` executable"
        )
        require_executable("gemini", BIN_ENV, "Gemini CLI", hint)

    def build_command(self, request: AgentRequest) -> AgentCommand:
        """The argv, stdin and environment of one iteration.

        The user's ``extra_args`` win over ours for the approval mode, session, model and
        trust flags; an interactive mode is refused and ``--output-format`` may only repeat
        ``stream-json``. With ``isolate_config`` the CLI runs with ralphctl's own config home
        (``gemini_home``), made from the user's (``$GEMINI_CLI_HOME`` or ``~``). A
        ``stop_hook`` (same-session mode) is added to the settings of the home the run uses;
        the session flags are then ours alone.
        """
        extra = list(request.extra_args)
        flags = given_flags(extra)
        _refuse_conflicts(extra, flags)
        if request.stop_hook is not None and (taken := sorted(flags & _SESSION_FLAGS)):
            raise ValueError(f"{' '.join(taken)}: a same-session loop sets the session itself")
        argv = [command_name("gemini", BIN_ENV)]
        argv += [] if flags & _OUTPUT_FLAGS else ["--output-format", "stream-json"]
        if not flags & _APPROVAL_FLAGS:
            argv += ["--approval-mode", approval_mode(request.permission_mode)]
        argv += [] if "--skip-trust" in flags else ["--skip-trust"]
        if request.resume:
            argv += ["--resume", request.session_id]
        elif not flags & _SESSION_FLAGS:
            argv += ["--session-id", request.session_id]
        if request.model is not None and not flags & _MODEL_FLAGS:
            argv += ["--model", request.model]
        argv += extra
        env = {"RALPHCTL_ITERATION": str(request.iteration)}
        if NO_RELAUNCH_ENV not in os.environ:
            env[NO_RELAUNCH_ENV] = "true"
        user_dir = config_dir(os.environ, Path.home())
        if request.stop_hook is not None:
            group = run_hook(request.stop_hook)
            home = (
                isolated_home(isolated_root(), user_dir, group)
                if request.isolate_config
                else hooked_home(isolated_root(HOOKED), user_dir, group)
            )
            env[HOME_ENV] = str(home)
        elif request.isolate_config:
            env[HOME_ENV] = str(isolated_home(isolated_root(), user_dir))
        return AgentCommand(argv=argv, stdin=request.prompt.encode("utf-8"), env=env)

    def new_parser(self) -> StreamParser:
        return new_parser()


def approval_mode(permission_mode: str) -> str:
    """The ``--approval-mode`` of one of ralphctl's permission modes; ValueError for a mode
    Gemini CLI cannot express."""
    try:
        return APPROVAL_MODES[permission_mode]
    except KeyError:
        raise ValueError(
            f"Gemini CLI has no permission mode {permission_mode!r}; "
            f"use one of: {', '.join(sorted(APPROVAL_MODES))}"
        ) from None


def run_hook(hook: StopHook) -> dict[str, object]:
    """The ``AfterAgent`` group of a same-session run: our hook, answering in Gemini's form."""
    command = shlex.join([*shlex.split(hook.command), *FORMAT_ARGS])
    return hook_group(RUN_HOOK_NAME, command, hook.timeout_s)


def isolated_root(kind: str = NAME) -> Path:
    """Where runs keep a Gemini CLI home of ralphctl's own (``NAME``: isolated runs;
    ``HOOKED``: hook-mode runs with the user's configuration): in ralphctl's user data dir."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("ralphctl")) / "agent-homes" / kind


def _refuse_conflicts(extra: Sequence[str], flags: set[str]) -> None:
    if taken := sorted(flags & _INTERACTIVE_FLAGS):
        raise ValueError(
            f"{' '.join(taken)}: ralphctl runs Gemini CLI headless; leave the interactive "
            "flags out of the agent arguments"
        )
    output_format = option_value(extra, *_OUTPUT_FLAGS)
    if flags & _OUTPUT_FLAGS and output_format != "stream-json":
        raise ValueError(
            f"--output-format {output_format or ''} is not supported: ralphctl reads the "
            "agent's stream-json output, so leave --output-format out"
        )


# --- configured: offline, from the environment and the user's settings -----------------------


def _configured(env: Mapping[str, str], home: Path) -> Configuration:
    """The auth type the CLI would use (its settings' ``security.auth.selectedType``, else the
    one its environment selects) and whether its credentials are there."""
    directory = config_dir(env, home)
    selected = auth_settings(user_settings(directory)).get("selectedType")
    if isinstance(selected, str) and selected:
        return _credentials_for(selected, env, directory)
    if env.get("GOOGLE_GENAI_USE_GCA") == "true":
        return _credentials_for("oauth-personal", env, directory)
    if env.get("GOOGLE_GENAI_USE_VERTEXAI") == "true":
        return _credentials_for("vertex-ai", env, directory)
    if env.get("GOOGLE_GEMINI_BASE_URL"):
        return Configuration(
            False,
            "$GOOGLE_GEMINI_BASE_URL is set but no auth type is selected: set "
            f'security.auth.selectedType to "gemini-api-key" in {directory / "settings.json"}',
        )
    if env.get("GEMINI_API_KEY"):
        return Configuration(True, "$GEMINI_API_KEY is set")
    if _key_in_env_file(directory):
        return Configuration(True, f"GEMINI_API_KEY is set in {directory / '.env'}")
    if (directory / "oauth_creds.json").is_file():
        return Configuration(
            False, "a Google login is stored but no auth type is selected: run `gemini` once"
        )
    return Configuration(
        False, "not configured: set $GEMINI_API_KEY, or run `gemini` once to log in"
    )


def _credentials_for(auth_type: str, env: Mapping[str, str], directory: Path) -> Configuration:
    if auth_type == "gemini-api-key":
        if env.get("GEMINI_API_KEY"):
            return Configuration(True, "API key auth: $GEMINI_API_KEY is set")
        if (directory / "gemini-credentials.json").is_file():
            return Configuration(True, "API key auth: a stored key")
        if _key_in_env_file(directory):
            return Configuration(True, f"API key auth: the key is in {directory / '.env'}")
        return Configuration(False, "API key auth selected but $GEMINI_API_KEY is not set")
    if auth_type == "oauth-personal":
        creds = directory / "oauth_creds.json"
        if creds.is_file():
            return Configuration(True, f"logged in with Google ({creds})")
        return Configuration(False, "Google login selected but not logged in: run `gemini` once")
    if auth_type == "vertex-ai":
        has_project = env.get("GOOGLE_CLOUD_PROJECT") and env.get("GOOGLE_CLOUD_LOCATION")
        if has_project or env.get("GOOGLE_API_KEY"):
            return Configuration(
                True, "Vertex AI auth: project and location or $GOOGLE_API_KEY set"
            )
        return Configuration(
            False,
            "Vertex AI selected: set $GOOGLE_CLOUD_PROJECT and $GOOGLE_CLOUD_LOCATION, "
            "or $GOOGLE_API_KEY",
        )
    return Configuration(True, f"auth type {auth_type!r} selected in the settings")


def _key_in_env_file(directory: Path) -> bool:
    """The ``.env`` beside the settings (which the CLI loads) sets ``GEMINI_API_KEY``."""
    try:
        lines = (directory / ".env").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    return any(line.strip().removeprefix("export ").startswith("GEMINI_API_KEY=") for line in lines)


@functools.cache
def parser_class() -> type[GeminiStreamParser]:
    """The stream parser, imported once a run has printed its first line (start-up)."""
    from ralphctl.agents.gemini_stream import GeminiStreamParser

    return GeminiStreamParser


def new_parser() -> StreamParser:
    return parser_class()()


SPEC = AgentSpec(
    name=NAME,
    summary="Gemini CLI (gemini --output-format stream-json)",
    make=lambda _options: GeminiAdapter(),
    parser=new_parser,
    capabilities=CAPABILITIES,
    executable=PACKAGE.executable,
    bin_env=BIN_ENV,
    package=PACKAGE,
    configured=_configured,
    # its settings, login and sessions; an isolated run's home (docs/agents/gemini.md)
    sandbox_paths=(".gemini/", "$GEMINI_CLI_HOME/.gemini/"),
)
