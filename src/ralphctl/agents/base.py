"""The one interface every agent adapter implements.

An adapter is three small things: how to build the command line for one iteration, how to
parse the process's stdout into normalised events and a final ``IterationResult``, and what
the agent can do (``Capabilities``). Spawning, timeouts and killing live in ``process``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ralphctl.agents.events import AgentEvent
from ralphctl.domain.model import IterationResult


class AgentUnavailable(RuntimeError):
    """The agent's executable cannot be found or run; the message says how to install it."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    reports_cost: bool = False
    reports_tokens: bool = False
    structured_stream: bool = False
    resumable_sessions: bool = False


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


@dataclass(frozen=True, slots=True)
class AgentCommand:
    """A ready-to-spawn process: argv, the bytes for its stdin, extra environment."""

    argv: Sequence[str]
    stdin: bytes = b""
    env: Mapping[str, str] = field(default_factory=dict)


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
