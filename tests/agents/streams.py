"""Replaying recorded stream-json through a parser, for the parser tests."""

from __future__ import annotations

from pathlib import Path

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.claude import ClaudeStreamParser
from ralphctl.agents.events import AgentEvent
from ralphctl.domain.model import IterationResult

CASSETTES = Path(__file__).parent / "cassettes" / "claude"
REAL_CLI_CASSETTES = Path(__file__).parents[1] / "realcli" / "cassettes"


def cassette_lines(name: str) -> list[bytes]:
    """The lines of ``cassettes/claude/<name>.jsonl`` as the process layer would cut them."""
    data = (CASSETTES / f"{name}.jsonl").read_bytes()
    lines = data.split(b"\n")
    return lines[:-1] if lines[-1] == b"" else lines


def replay_lines(
    lines: list[bytes], outcome: ProcessOutcome | None = None
) -> tuple[list[AgentEvent], IterationResult]:
    parser = ClaudeStreamParser()
    events = [event for line in lines for event in parser.feed(line)]
    return events, parser.finish(outcome or exited(0))


def replay(
    name: str, outcome: ProcessOutcome | None = None
) -> tuple[list[AgentEvent], IterationResult]:
    return replay_lines(cassette_lines(name), outcome)


def exited(code: int | None, stderr: str = "", **flags: bool) -> ProcessOutcome:
    return ProcessOutcome(exit_code=code, duration_ms=1234, stderr_tail=stderr, **flags)
