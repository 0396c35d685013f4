"""Replaying the Cursor cassettes (cassettes/cursor: see its README) through the Cursor parser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.cursor_stream import CursorStreamParser
from ralphctl.agents.events import AgentEvent
from ralphctl.domain.model import IterationResult
from tests.agents.streams import feed_all, recorded_lines, recorded_sidecar

CASSETTES = Path(__file__).parents[1] / "cassettes" / "cursor"


def sidecar(name: str) -> dict[str, Any]:
    """What ``<name>.json`` says of the run: exit code, stderr, what it shows, its source."""
    return recorded_sidecar(CASSETTES / f"{name}.json")


def cassette_lines(name: str) -> list[bytes]:
    return recorded_lines(CASSETTES / f"{name}.jsonl")


def recorded_outcome(name: str, **flags: bool) -> ProcessOutcome:
    facts = sidecar(name)
    return ProcessOutcome(facts["exit_code"], 1234, facts["stderr_tail"], **flags)


def replay_lines(
    lines: list[bytes], outcome: ProcessOutcome
) -> tuple[list[AgentEvent], IterationResult]:
    return feed_all(CursorStreamParser(), lines, outcome)


def replay(name: str, **flags: bool) -> tuple[list[AgentEvent], IterationResult]:
    return replay_lines(cassette_lines(name), recorded_outcome(name, **flags))
