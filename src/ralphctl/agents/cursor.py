"""Cursor: the ``cursor-agent -p --output-format stream-json`` command line of one iteration
(the parser is in ``cursor_stream``).

Cursor's CLI is not published on a package registry (the npm package called ``cursor-agent``
is someone else's): ralphctl cannot install it, and it is tested on recorded streams of its
documented format only (docs/agents/cursor.md). Facts this module relies on, from Cursor's
documentation and peers that run the CLI:
- ``-p`` (``--print``) runs headless; with no prompt argument the prompt is read from stdin,
  which is how ralphctl sends it (``$RALPHCTL_CURSOR_PROMPT_VIA=argv`` passes it as the last
  argument instead, for a build that does not read stdin, up to 32 KiB).
- The binary is ``cursor-agent``; newer installs call it ``agent`` (a name other CLIs use too,
  so ``agent`` is taken only when it resolves into a ``cursor-agent`` install).
- Headless runs need the work dir trusted (``--trust``; ``--force``/``--yolo`` imply it).
  Cursor's own rules let the agent read and edit files and refuse shell commands not allowed
  in its ``cli-config.json``; ``--mode plan`` is read-only; ``--force`` allows every command,
  ``--sandbox disabled`` drops its sandbox, ``--approve-mcps`` approves MCP servers.
- ``--resume <session id>`` continues a session; ``--continue`` (the most recent one, which
  may be someone else's) is refused. A fresh run gets its session id from the CLI.
- There is no documented way to drop the user's MCP servers and hooks while keeping the
  login, so ``isolate_agent_config`` is refused rather than silently not applied.
- Hook mode (``--mode hook``) is refused: whether ``-p`` runs fire the ``stop`` hook is not
  documented and cannot be tried here (``NO_HOOK_MODE_REASON``).
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ralphctl.agents.argv import given_flags, option_value
from ralphctl.agents.base import AgentCommand, AgentRequest, Capabilities, StreamParser
from ralphctl.agents.executables import executable_not_found, find_executable
from ralphctl.agents.spec import AgentSpec, Configuration, credential_in_env

if TYPE_CHECKING:
    from ralphctl.agents.cursor_stream import CursorStreamParser

BIN_ENV = "RALPHCTL_CURSOR_BIN"
EXECUTABLE = "cursor-agent"
#: The newer name of the binary; taken only when it resolves into a ``cursor-agent`` install.
NEW_EXECUTABLE = "agent"
INSTALL_HINT = (
    "install Cursor's CLI as Cursor's documentation says (it is not on a package registry), "
    f"or set {BIN_ENV} to the path of the `cursor-agent` executable"
)
#: The neutral permission modes and the Cursor flags that express them.
MODE_FLAGS: Mapping[str, tuple[str, ...]] = {
    "default": ("--trust",),
    "acceptEdits": ("--trust",),
    "plan": ("--trust", "--mode", "plan"),
    "bypassPermissions": ("--force", "--sandbox", "disabled", "--approve-mcps"),
}
#: Why ``ralphctl run --mode hook --agent cursor`` is refused (``ralphctl plugin install
#: --agent cursor`` serves Cursor's editor and interactive CLI instead).
NO_HOOK_MODE_REASON = (
    "Cursor's CLI is not on a package registry, so ralphctl cannot install or test it, and"
    " its documentation does not say that its headless -p mode fires stop hooks; use"
    " `ralphctl plugin install --agent cursor` and /ralph-loop in Cursor instead"
)
CURSOR_CAPABILITIES = Capabilities(
    fresh=True,
    resume=True,
    structured_stream=True,
    permission_modes=frozenset(MODE_FLAGS),
    no_hook_mode_reason=NO_HOOK_MODE_REASON,
)
API_KEY_ENV = "CURSOR_API_KEY"
#: How the prompt reaches the CLI: ``$RALPHCTL_CURSOR_PROMPT_VIA``, ``stdin`` when unset.
PROMPT_VIA_ENV = "RALPHCTL_CURSOR_PROMPT_VIA"
PROMPT_VIA = ("stdin", "argv")
#: The longest prompt passed on the command line (Windows allows 32 KiB for a whole one).
MAX_ARGV_PROMPT_BYTES = 32 * 1024

_PRINT_FLAGS = frozenset({"-p", "--print"})
_PERMISSION_FLAGS = frozenset({"--force", "-f", "--yolo", "--mode", "--sandbox", "--trust"})
_TRUSTING_FLAGS = frozenset({"--trust", "--force", "-f", "--yolo"})
_MODEL_FLAGS = frozenset({"-m", "--model"})


class CursorAdapter:
    """Runs Cursor's CLI headless: ``cursor-agent -p --output-format stream-json``."""

    name: str = "cursor"
    capabilities: Capabilities = CURSOR_CAPABILITIES

    def __init__(self, prompt_via: str = "stdin") -> None:
        if prompt_via not in PROMPT_VIA:
            raise ValueError(f"{PROMPT_VIA_ENV}={prompt_via!r}: use one of {', '.join(PROMPT_VIA)}")
        self._prompt_via = prompt_via

    def check_available(self) -> None:
        if executable() is None:
            absent = "neither `cursor-agent` nor Cursor's `agent` is on PATH"
            raise executable_not_found(BIN_ENV, "Cursor CLI", absent, INSTALL_HINT)

    def build_command(self, request: AgentRequest) -> AgentCommand:
        """The argv, stdin (the prompt) and environment of one iteration.

        The user's ``extra_args`` win over ours for permissions, the model and the session;
        ``--continue`` is refused and ``--output-format`` may only repeat ``stream-json``.
        """
        extra = list(request.extra_args)
        flags = given_flags(extra)
        if "--continue" in flags:
            raise ValueError(
                "--continue is not allowed: it resumes the most recent session, which may "
                "belong to someone else; ralphctl resumes sessions by id"
            )
        if "--output-format" in flags and option_value(extra, "--output-format") != "stream-json":
            raise ValueError(
                "--output-format: ralphctl reads the agent's stream-json output, "
                "so leave --output-format out"
            )
        if request.isolate_config:
            raise ValueError(
                "isolate_agent_config is not available for cursor: its CLI has no documented "
                "way to leave out your MCP servers and hooks while keeping your login"
            )
        if request.permission_mode not in MODE_FLAGS:
            raise ValueError(
                f"permission mode {request.permission_mode!r} is not one Cursor can express; "
                f"use one of: {', '.join(sorted(MODE_FLAGS))}"
            )
        argv = [executable() or os.environ.get(BIN_ENV) or EXECUTABLE]
        argv += [] if flags & _PRINT_FLAGS else ["-p"]
        argv += [] if "--output-format" in flags else ["--output-format", "stream-json"]
        if not flags & _PERMISSION_FLAGS:
            argv += MODE_FLAGS[request.permission_mode]
        elif not flags & _TRUSTING_FLAGS:
            argv.append("--trust")
        if request.model is not None and not flags & _MODEL_FLAGS:
            argv += ["--model", request.model]
        if request.resume and "--resume" not in flags:
            argv += ["--resume", request.session_id]
        argv += extra
        env = {"RALPHCTL_ITERATION": str(request.iteration)}
        prompt = request.prompt.encode("utf-8")
        if self._prompt_via == "stdin":
            return AgentCommand(argv=argv, stdin=prompt, env=env)
        if len(prompt) > MAX_ARGV_PROMPT_BYTES:
            raise ValueError(
                f"the prompt is {len(prompt)} bytes, too long for the command line "
                f"({MAX_ARGV_PROMPT_BYTES} at most); unset {PROMPT_VIA_ENV} to send it on stdin"
            )
        return AgentCommand(argv=[*argv, "--", request.prompt], env=env)

    def new_parser(self) -> StreamParser:
        return new_parser()


def executable() -> str | None:
    """``$RALPHCTL_CURSOR_BIN`` if set, else ``cursor-agent`` (ralphctl's or on PATH), else an
    ``agent`` on PATH that resolves into a ``cursor-agent`` install."""
    found = find_executable(EXECUTABLE, BIN_ENV)
    if found is not None or os.environ.get(BIN_ENV):
        return found
    newer = shutil.which(NEW_EXECUTABLE)
    if newer is None or EXECUTABLE not in Path(newer).resolve().parts:
        return None
    return newer


def _configured(env: Mapping[str, str], home: Path) -> Configuration:
    """``$CURSOR_API_KEY``, or the login ``cursor-agent login`` stores on Linux."""
    if found := credential_in_env(env, [API_KEY_ENV]):
        return found
    for path in login_files(env, home):
        if path.is_file():
            return Configuration(True, f"logged in ({path})")
    return Configuration(
        False,
        f"no ${API_KEY_ENV} and no stored login: run `cursor-agent login` or set "
        f"${API_KEY_ENV} (a login kept in the system keychain cannot be seen offline)",
    )


def login_files(env: Mapping[str, str], home: Path) -> list[Path]:
    """Where the CLI may keep its login: ``$CURSOR_CONFIG_DIR``, then ``$XDG_CONFIG_HOME/cursor``
    (``~/.config/cursor``), each ``auth.json``."""
    folders = [Path(env["CURSOR_CONFIG_DIR"])] if env.get("CURSOR_CONFIG_DIR") else []
    config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    folders.append(config / "cursor")
    return [folder / "auth.json" for folder in folders]


def _make(_options: Mapping[str, str]) -> CursorAdapter:
    return CursorAdapter(prompt_via=os.environ.get(PROMPT_VIA_ENV) or "stdin")


@functools.cache
def parser_class() -> type[CursorStreamParser]:
    """The stream parser, imported once a run has printed its first line (start-up)."""
    from ralphctl.agents.cursor_stream import CursorStreamParser

    return CursorStreamParser


def new_parser() -> StreamParser:
    return parser_class()()


SPEC = AgentSpec(
    name="cursor",
    summary="Cursor (cursor-agent -p, stream-json; not on a package registry)",
    make=_make,
    parser=new_parser,
    capabilities=CURSOR_CAPABILITIES,
    executable=EXECUTABLE,
    bin_env=BIN_ENV,
    configured=_configured,
    # its config and login, and its own installation, which updates itself (cursor.md)
    sandbox_paths=(
        ".cursor/",
        ".config/cursor/",
        "$CURSOR_CONFIG_DIR/",
        "$XDG_CONFIG_HOME/cursor/",
        ".local/share/cursor-agent/",
    ),
)
