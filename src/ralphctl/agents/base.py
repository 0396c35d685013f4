"""The one interface every agent adapter implements.

An adapter is three small things: how to build the command line for one iteration, how to
parse the process's stdout into normalised events and a final ``IterationResult``, and what
the agent can do (``Capabilities``). Spawning, timeouts and killing live in ``process``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ralphctl.domain.model import IterationResult

if TYPE_CHECKING:  # the event classes come with a parser, once an agent has started
    from ralphctl.agents.events import AgentEvent


class AgentUnavailable(RuntimeError):
    """The agent's executable cannot be found or run; the message says how to install it."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What an agent CLI can do. The engine asks these, never the agent's name."""

    fresh: bool = True  # one prompt per process: fresh-context loops
    same_session: bool = False  # runs a Stop hook, so one session can be kept going (hook mode)
    resume: bool = False  # continues a session by its id (``AgentRequest.resume``)
    #: The agent names its sessions itself (``SessionStarted``): ``AgentRequest.session_id``
    #: is then only for resuming one, and hook mode adopts the id the agent gives.
    chooses_session_id: bool = False
    reports_cost: bool = False  # its stream reports the cost in USD
    reports_tokens: bool = False
    structured_stream: bool = False
    permission_modes: frozenset[str] = frozenset()  # the modes it takes; empty: it has none
    temperature: bool = False  # takes a sampling temperature (``AgentRequest.temperature``)
    plugins: bool = False  # loads named plugins for a run (``AgentRequest.plugins``)
    #: Why this agent cannot run hook mode although it has a hook (e.g. its headless mode
    #: does not fire it): the refusal of ``--mode hook`` says so. Empty: no particular reason.
    no_hook_mode_reason: str = ""


@dataclass(frozen=True, slots=True)
class StopHook:
    """Same-session mode: a command the agent runs at every Stop of its session.

    ``max_blocks``: how many stops in a row the agent must let the command block (the loop's
    bound and one more); ``disabled_plugins``: agent plugins that would run it a second time.
    """

    command: str
    timeout_s: int
    max_blocks: int
    disabled_plugins: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentRequest:
    """Everything an adapter needs to build one iteration's command."""

    prompt: str
    workdir: Path
    iteration: int
    session_id: str
    extra_args: Sequence[str] = ()
    permission_mode: str = "acceptEdits"
    remaining_cost_usd: float | None = None
    model: str | None = None
    max_output_tokens: int | None = None
    resume: bool = False  # continue the session ``session_id`` instead of starting it
    stop_hook: StopHook | None = None  # same-session mode (capability ``same_session``)
    temperature: float | None = None  # None: the agent's default (capability ``temperature``)
    plugins: tuple[str, ...] = ()  # to enable for this run (capability ``plugins``)
    #: Run without the user's own agent configuration (global plugins, hooks, MCP servers),
    #: keeping its credentials (``isolate_agent_config``).
    isolate_config: bool = False
    #: A private path the prompt may be written to, for an agent that reads it from a file
    #: (the command then names it in ``AgentCommand.prompt_file``).
    prompt_path: Path | None = None
    #: The run is confined by ralphctl's ``--sandbox`` (docs/safety.md): an agent whose own
    #: sandbox cannot be made inside it maps its permission modes accordingly.
    sandboxed: bool = False


@dataclass(frozen=True, slots=True)
class AgentCommand:
    """A ready-to-spawn process: argv, the bytes for its stdin, extra environment.

    With ``prompt_file`` set, the process layer writes ``stdin`` to that file (mode 0600)
    before the spawn instead of piping it, and deletes the file once the process has ended.
    """

    argv: Sequence[str]
    stdin: bytes = b""
    env: Mapping[str, str] = field(default_factory=dict)
    prompt_file: Path | None = None


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """How the process ended, as seen by the process layer."""

    exit_code: int | None
    duration_ms: int
    stderr_tail: str
    timed_out: bool = False
    interrupted: bool = False


class StreamParser(Protocol):
    """Parses one run's stdout line by line; one parser per run."""

    def feed(self, line: bytes) -> list[AgentEvent]:
        """Parse one line (without its newline). Never raises on bad input."""
        ...

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        """Build the iteration's result once the process has ended."""
        ...


class AgentAdapter(Protocol):
    name: str
    capabilities: Capabilities

    def check_available(self) -> None:
        """Raise AgentUnavailable (with an install hint) if the agent cannot run here."""
        ...

    def build_command(self, request: AgentRequest) -> AgentCommand: ...

    def new_parser(self) -> StreamParser: ...


class ParserOnFirstLine:
    """The parser ``new`` makes, made when the run's first line (or its end) needs it: the
    adapter's parser module and the event classes are imported once the agent has started,
    not on the way to its spawn (start-up, bench/overhead.py)."""

    def __init__(self, new: Callable[[], StreamParser]) -> None:
        self._new = new
        self._parser: StreamParser | None = None

    def feed(self, line: bytes) -> list[AgentEvent]:
        return self._made().feed(line)

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        return self._made().finish(outcome)

    def _made(self) -> StreamParser:
        if self._parser is None:
            self._parser = self._new()
        return self._parser
