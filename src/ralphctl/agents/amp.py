"""Amp: the ``amp --execute --stream-json`` command line of one iteration (the parser is in
``amp_stream``).

Facts this module relies on (CLI 0.0.1790142911-g7618fb, docs/agents/amp.md):
- ``amp --execute --stream-json`` reads the prompt from stdin and prints Claude Code
  compatible stream JSON; ``amp threads continue <thread id> --execute …`` continues a thread.
  Amp names its threads itself (``T-…``): a fresh run cannot take ralphctl's session id.
- Permissions: Amp's own rules by default (file edits in the work dir allowed, shell commands
  outside its allowlist need an approval, which ends a stream-json run with an error);
  ``--dangerously-allow-all`` (a flag its help does not list) allows everything. It has no
  read-only mode a flag can select, so ``plan`` is not offered.
- ``--mode`` (low, medium, high, ultra, or a plugin mode) chooses the model; ralphctl's
  ``model`` is passed as the mode.
- ``--settings-file`` replaces the user's settings (MCP servers, permission rules, tool
  lists, ``amp.dangerouslyAllowAll``); a missing file reads as empty settings. The login is
  kept elsewhere (the system keyring or ``secrets.json``), so an isolated run keeps it.
- ``AMP_SKIP_UPDATE_CHECK=1`` stops the CLI from updating itself in the middle of a loop.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ralphctl.agents.argv import given_flags
from ralphctl.agents.base import AgentCommand, AgentRequest, Capabilities, StreamParser
from ralphctl.agents.executables import command_name, require_executable
from ralphctl.agents.spec import AgentSpec, Configuration, Package, credential_in_env

if TYPE_CHECKING:
    from ralphctl.agents.amp_stream import AmpStreamParser

BIN_ENV = "RALPHCTL_AMP_BIN"
PACKAGE = Package("npm", "@ampcode/cli", "0.0.1790142911-g7618fb", "amp")
INSTALL_HINT = (
    "install it with `ralphctl agents install amp`, "
    f"or set {BIN_ENV} to the path of the `amp` executable"
)
#: The neutral permission modes and the Amp flags that express them (``default`` and
#: ``acceptEdits``: Amp's own rules, which let it edit files in the work dir without asking).
MODE_FLAGS: Mapping[str, tuple[str, ...]] = {
    "default": (),
    "acceptEdits": (),
    "bypassPermissions": ("--dangerously-allow-all",),
}
AMP_CAPABILITIES = Capabilities(
    fresh=True,
    resume=True,
    reports_tokens=True,
    structured_stream=True,
    permission_modes=frozenset(MODE_FLAGS),
)
API_KEY_ENV = "AMP_API_KEY"

_EXECUTE_FLAGS = frozenset({"-x", "--execute"})
_STREAM_FLAGS = frozenset({"--stream-json", "--stream-json-thinking"})
_IDE_FLAGS = frozenset({"--ide", "--no-ide"})
_MODE_FLAGS = frozenset({"-m", "--mode"})
_SUBCOMMANDS = frozenset({"threads", "t", "thread", "last", "l"})


class AmpAdapter:
    """Runs Amp headless: ``amp --execute --stream-json`` with the prompt on stdin."""

    name: str = "amp"
    capabilities: Capabilities = AMP_CAPABILITIES

    def check_available(self) -> None:
        require_executable("amp", BIN_ENV, "Amp CLI", INSTALL_HINT)

    def build_command(self, request: AgentRequest) -> AgentCommand:
        """The argv, stdin (the prompt) and environment of one iteration.

        The user's ``extra_args`` win over ours for permissions, the mode, the IDE connection
        and the settings file; they may not name a subcommand (ralphctl picks the thread) or
        ask for stream JSON on stdin (the prompt is plain text).
        """
        extra = list(request.extra_args)
        flags = given_flags(extra)
        if taken := sorted(_SUBCOMMANDS & set(extra)):
            raise ValueError(
                f"{' '.join(taken)}: ralphctl starts or continues the Amp thread itself; "
                "leave subcommands out of the agent arguments"
            )
        if "--stream-json-input" in flags:
            raise ValueError(
                "--stream-json-input is not supported: ralphctl sends the prompt as plain text"
            )
        if request.permission_mode not in MODE_FLAGS:
            raise ValueError(
                f"permission mode {request.permission_mode!r} is not one Amp can express; "
                f"use one of: {', '.join(sorted(MODE_FLAGS))}"
            )
        argv = [command_name("amp", BIN_ENV)]
        if request.resume:
            argv += ["threads", "continue", request.session_id]
        argv += [] if flags & _EXECUTE_FLAGS else ["--execute"]
        argv += [] if flags & _STREAM_FLAGS else ["--stream-json"]
        argv += [] if flags & _IDE_FLAGS else ["--no-ide"]
        if "--dangerously-allow-all" not in flags:
            argv += MODE_FLAGS[request.permission_mode]
        if request.model is not None and not flags & _MODE_FLAGS:
            argv += ["--mode", request.model]
        if request.isolate_config and "--settings-file" not in flags:
            argv += ["--settings-file", str(isolated_settings_file(request))]
        argv += extra
        env = {"RALPHCTL_ITERATION": str(request.iteration), "AMP_SKIP_UPDATE_CHECK": "1"}
        return AgentCommand(argv=argv, stdin=request.prompt.encode("utf-8"), env=env)

    def new_parser(self) -> StreamParser:
        return new_parser()


def isolated_settings_file(request: AgentRequest) -> Path:
    """A settings file that does not exist, so Amp runs on empty settings: next to the run's
    private prompt file (a folder only this user can write to, so no one can put one there)."""
    if request.prompt_path is None:
        raise ValueError(
            "isolate_agent_config: the Amp adapter needs the run's private folder "
            "(AgentRequest.prompt_path) to point Amp at empty settings"
        )
    return request.prompt_path.with_name(f"amp-settings-{request.session_id}.json")


def _configured(env: Mapping[str, str], home: Path) -> Configuration:
    """``$AMP_API_KEY``, or an API key ``amp login`` stored in Amp's ``secrets.json``."""
    if found := credential_in_env(env, [API_KEY_ENV]):
        return found
    secrets = secrets_file(env, home)
    if _has_api_key(secrets):
        return Configuration(True, f"logged in ({secrets})")
    return Configuration(
        False,
        f"no ${API_KEY_ENV} and no login in {secrets}: run `amp login` or set ${API_KEY_ENV} "
        "(a login kept in the system keyring cannot be seen offline)",
    )


def secrets_file(env: Mapping[str, str], home: Path) -> Path:
    """Where Amp keeps a login outside the system keyring: ``$XDG_DATA_HOME/amp/secrets.json``
    (``~/.local/share`` when unset)."""
    data = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else home / ".local" / "share"
    return data / "amp" / "secrets.json"


def _has_api_key(path: Path) -> bool:
    """The file holds an ``apiKey@<server>`` entry (a key per Amp server URL)."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(stored, dict) and any(
        isinstance(key, str) and key.startswith("apiKey@") and value
        for key, value in stored.items()
    )


@functools.cache
def parser_class() -> type[AmpStreamParser]:
    """The stream parser, imported once a run has printed its first line (start-up)."""
    from ralphctl.agents.amp_stream import AmpStreamParser

    return AmpStreamParser


def new_parser() -> StreamParser:
    return parser_class()()


SPEC = AgentSpec(
    name="amp",
    summary="Amp (amp --execute --stream-json)",
    make=lambda _options: AmpAdapter(),
    parser=new_parser,
    capabilities=AMP_CAPABILITIES,
    executable="amp",
    bin_env=BIN_ENV,
    package=PACKAGE,
    configured=_configured,
    # its settings and its login kept outside the keyring (docs/agents/amp.md)
    sandbox_paths=(
        ".config/amp/",
        ".local/share/amp/",
        "$XDG_CONFIG_HOME/amp/",
        "$XDG_DATA_HOME/amp/",
    ),
)
