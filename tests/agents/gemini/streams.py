"""Replaying recorded ``gemini --output-format stream-json`` output through the parser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.events import AgentEvent
from ralphctl.agents.gemini_stream import GeminiStreamParser
from ralphctl.domain.model import IterationResult
from tests.agents.streams import exited, feed_all, recorded_lines, recorded_sidecar

CASSETTES = Path(__file__).parents[1] / "cassettes" / "gemini"


def cassette_lines(name: str) -> list[bytes]:
    """The lines of ``cassettes/gemini/<name>.jsonl`` as the process layer would cut them."""
    return recorded_lines(CASSETTES / f"{name}.jsonl")


def sidecar(name: str) -> dict[str, Any]:
    return recorded_sidecar(CASSETTES / f"{name}.json")


def replay_lines(
    lines: list[bytes], outcome: ProcessOutcome | None = None
) -> tuple[list[AgentEvent], IterationResult]:
    return feed_all(GeminiStreamParser(), lines, outcome or exited(0))


def replay(name: str) -> tuple[list[AgentEvent], IterationResult]:
    """A cassette through the parser, ended as the recorded process ended."""
    recorded = sidecar(name)
    return replay_lines(
        cassette_lines(name), exited(recorded["exit_code"], recorded["stderr_tail"])
    )


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj).encode()
