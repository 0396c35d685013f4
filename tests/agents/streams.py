"""Replaying recorded agent output through a parser, for the parser tests: the helpers
every agent's tests share, and Claude's cassettes."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ralphctl.agents.base import ProcessOutcome, StreamParser
from ralphctl.agents.claude_stream import ClaudeStreamParser
from ralphctl.agents.events import AgentEvent
from ralphctl.domain.model import IterationResult

CASSETTES = Path(__file__).parent / "cassettes" / "claude"
REAL_CLI_CASSETTES = Path(__file__).parents[1] / "realcli" / "cassettes"


def recorded_lines(path: Path) -> list[bytes]:
    """The lines of a recorded stream as the process layer would cut them."""
    lines = path.read_bytes().split(b"\n")
    return lines[:-1] if lines[-1] == b"" else lines


def recorded_sidecar(path: Path) -> dict[str, Any]:
    """What a cassette's sidecar ``<name>.json`` says of the run (exit code, stderr tail…)."""
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def feed_all(
    parser: StreamParser, lines: Iterable[bytes], outcome: ProcessOutcome
) -> tuple[list[AgentEvent], IterationResult]:
    """Every event ``parser`` makes of ``lines``, and its result once the process ended so."""
    events = [event for line in lines for event in parser.feed(line)]
    return events, parser.finish(outcome)


def cassette_lines(name: str) -> list[bytes]:
    """The lines of ``cassettes/claude/<name>.jsonl`` as the process layer would cut them."""
    return recorded_lines(CASSETTES / f"{name}.jsonl")


def replay_lines(
    lines: list[bytes], outcome: ProcessOutcome | None = None
) -> tuple[list[AgentEvent], IterationResult]:
    return feed_all(ClaudeStreamParser(), lines, outcome or exited(0))


def replay(
    name: str, outcome: ProcessOutcome | None = None
) -> tuple[list[AgentEvent], IterationResult]:
    return replay_lines(cassette_lines(name), outcome)


def exited(code: int | None, stderr: str = "", **flags: bool) -> ProcessOutcome:
    return ProcessOutcome(exit_code=code, duration_ms=1234, stderr_tail=stderr, **flags)
