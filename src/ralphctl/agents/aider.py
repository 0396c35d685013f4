"""Aider: the command line of one iteration (the parser of its text output is in
``aider_stream``).

Facts this module relies on (aider-chat 0.86.2, docs/agents/aider.md):
- ``--message-file FILE`` sends the file's text as one message, handles the reply (edits,
  reflections) and exits; ``--yes-always`` answers every question yes except running shell
  commands, which need an explicit yes, so headless Aider never runs them.
- ``--no-auto-commits`` stops its own commits (dirty commits too): ralphctl owns checkpoints.
  Outside a git work tree Aider would create a repository (``--yes-always``), so the adapter
  passes ``--no-git`` there.
- ``--dry-run`` shows the edits without applying them: the read-only ``plan`` mode.
- Its text shows tokens rounded (``1.2k sent``); ``--analytics-log FILE`` with
  ``--no-analytics`` writes the exact counts of each reply to a local file only (nothing is
  sent): its ``message_send`` events (``prompt_tokens``, ``completion_tokens``, ``cost``).
- No session to resume (each run is a new chat), no plugins, hooks or MCP servers.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ralphctl.agents.argv import given_flags
from ralphctl.agents.base import AgentCommand, AgentRequest, Capabilities, StreamParser
from ralphctl.agents.executables import command_name, require_executable
from ralphctl.agents.private_dirs import run_file
from ralphctl.agents.spec import AgentSpec, Configuration, Package, credential_in_env

if TYPE_CHECKING:
    from ralphctl.agents.aider_stream import AiderStreamParser

BIN_ENV = "RALPHCTL_AIDER_BIN"
PACKAGE = Package("pypi", "aider-chat", "0.86.2", "aider")
INSTALL_HINT = (
    "install it with `ralphctl agents install aider`, "
    f"or set {BIN_ENV} to the path of the `aider` executable"
)
#: The flags of every run: one message, no questions, no commits, plain text, no network
#: besides the model (no update check, no analytics sent).
BASE_FLAGS = (
    "--yes-always",
    "--no-auto-commits",
    "--no-pretty",
    "--no-stream",
    "--no-check-update",
    "--no-show-model-warnings",
    "--no-analytics",
)
#: The neutral permission modes and Aider's flags for them. Aider cannot ask a human in a
#: headless run, nor run shell commands without one: ``default`` and ``bypassPermissions``
#: are not expressible.
MODE_FLAGS: Mapping[str, tuple[str, ...]] = {
    "acceptEdits": (),
    "plan": ("--dry-run",),
}
AIDER_CAPABILITIES = Capabilities(
    fresh=True,
    resume=False,
    reports_cost=True,
    reports_tokens=True,
    structured_stream=False,
    permission_modes=frozenset(MODE_FLAGS),
)
#: Where a provider's key may be set for Aider (environment or its ``.env`` files).
CREDENTIAL_ENV = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "XAI_API_KEY",
    "AZURE_API_KEY",
    "OLLAMA_API_BASE",
)

#: Aider is Python: piped, its output would wait in a buffer until it exits, so nothing would
#: show live and a run killed at the timeout would leave no trace of what it was doing.
UNBUFFERED = {"PYTHONUNBUFFERED": "1"}

_MESSAGE_FLAGS = frozenset({"-m", "--message", "--msg", "-f", "--message-file"})
_UNUSABLE_FLAGS = frozenset({"--pretty", "--stream", "--auto-commits", "--gui", "--browser"})


class AiderAdapter:
    """Runs Aider headless: ``aider --message-file FILE --yes-always --no-auto-commits …``."""

    name: str = "aider"
    capabilities: Capabilities = AIDER_CAPABILITIES

    def __init__(self) -> None:
        self._usage_log: Path | None = None

    def check_available(self) -> None:
        require_executable("aider", BIN_ENV, "Aider", INSTALL_HINT)

    def build_command(self, request: AgentRequest) -> AgentCommand:
        """The argv, the prompt (in the private prompt file when the engine gives one, else
        on stdin, read as ``/dev/stdin``) and the environment of one iteration.

        The user's ``extra_args`` win for the model, the analytics log and ``--git``; they
        may not give a message, nor the flags that would break the text ralphctl reads
        (``--pretty``, ``--stream``) or make Aider commit (``--auto-commits``). Resuming is
        refused: Aider has no session to resume.
        """
        if request.resume:
            raise ValueError("Aider cannot resume a session: each run is a new chat")
        extra = list(request.extra_args)
        flags = given_flags(extra)
        if taken := sorted(flags & (_MESSAGE_FLAGS | _UNUSABLE_FLAGS)):
            raise ValueError(
                f"{' '.join(taken)}: ralphctl gives Aider its message and reads its plain "
                "output without its own commits; leave these out of the agent arguments"
            )
        message = request.prompt_path if request.prompt_path is not None else Path("/dev/stdin")
        argv = [command_name("aider", BIN_ENV), "--message-file", str(message)]
        argv += BASE_FLAGS
        argv += MODE_FLAGS.get(request.permission_mode, ())
        if request.model is not None and "--model" not in flags:
            argv += ["--model", request.model]
        if not flags & {"--git", "--no-git"} and not _in_git_work_tree(request.workdir):
            argv.append("--no-git")
        self._usage_log = None
        if "--analytics-log" not in flags:
            self._usage_log = usage_log(request)
            argv += ["--analytics-log", str(self._usage_log)]
        argv += extra
        return AgentCommand(
            argv=argv,
            stdin=request.prompt.encode("utf-8"),
            env={"RALPHCTL_ITERATION": str(request.iteration), **UNBUFFERED},
            prompt_file=request.prompt_path,
        )

    def new_parser(self) -> StreamParser:
        """A parser for the run last built: it reads that run's analytics log when it ends."""
        return parser_class()(usage_log=self._usage_log)


def usage_log(request: AgentRequest) -> Path:
    """Where Aider logs a run's events: next to the run's private prompt file when the engine
    gives one, else in this user's ralphctl temp dir (made private here)."""
    return run_file(request, f"aider-usage-{request.session_id}.jsonl")


def _in_git_work_tree(workdir: Path) -> bool:
    return any((folder / ".git").exists() for folder in (workdir, *workdir.resolve().parents))


def _configured(env: Mapping[str, str], home: Path) -> Configuration:
    """A provider key in the environment, in ``~/.env`` or in ``~/.aider.conf.yml``."""
    if found := credential_in_env(env, CREDENTIAL_ENV):
        return found
    for path, keys in ((home / ".env", CREDENTIAL_ENV), (home / ".aider.conf.yml", _YAML_KEYS)):
        if _mentions(path, keys):
            return Configuration(True, f"a provider key is set in {path}")
    return Configuration(
        False, "no model provider key: set e.g. $OPENAI_API_KEY or $ANTHROPIC_API_KEY"
    )


_YAML_KEYS = ("openai-api-key", "anthropic-api-key", "api-key", "openai-api-base")


def _mentions(path: Path, keys: Sequence[str]) -> bool:
    """``path`` has a line setting one of ``keys`` (``KEY=…`` or ``key: …``)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    for line in lines:
        name = line.strip().removeprefix("export ").split("=", 1)[0].split(":", 1)[0].strip()
        if name in keys:
            return True
    return False


@functools.cache
def parser_class() -> type[AiderStreamParser]:
    """The stream parser, imported once a run has printed its first line (start-up)."""
    from ralphctl.agents.aider_stream import AiderStreamParser

    return AiderStreamParser


def new_parser() -> StreamParser:
    """A parser of a run with no details known (recorded streams, benchmarks)."""
    return parser_class()()


SPEC = AgentSpec(
    name="aider",
    summary="Aider (aider --message-file, plain text)",
    make=lambda _options: AiderAdapter(),
    parser=new_parser,
    capabilities=AIDER_CAPABILITIES,
    executable="aider",
    bin_env=BIN_ENV,
    package=PACKAGE,
    configured=_configured,
    # its caches (~/.aider), its config files and the keys in ~/.env (docs/agents/aider.md)
    sandbox_paths=(".aider/", ".aider*", ".env"),
)
