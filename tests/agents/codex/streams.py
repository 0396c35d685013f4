"""Replaying recorded ``codex exec --json`` output through the Codex parser."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.codex_stream import CodexStreamParser
from ralphctl.agents.events import AgentEvent
from ralphctl.domain.model import IterationResult
from tests.agents.streams import exited, feed_all, recorded_lines, recorded_sidecar

CASSETTES = Path(__file__).parents[1] / "cassettes" / "codex"
#: The moment the usage-limit cassette was recorded (19:22 UTC; it says "Try again at 8:22 PM").
RECORDED_AT = datetime(2026, 11, 23, 19, 22, 43, tzinfo=UTC)


def cassette_lines(name: str) -> list[bytes]:
    """The lines of ``cassettes/codex/<name>.jsonl`` as the process layer would cut them."""
    return recorded_lines(CASSETTES / f"{name}.jsonl")


def sidecar(name: str) -> dict[str, Any]:
    return recorded_sidecar(CASSETTES / f"{name}.json")


def replay_lines(
    lines: list[bytes],
    outcome: ProcessOutcome | None = None,
    *,
    model: str | None = "gpt-5.5",
    now: datetime = RECORDED_AT,
) -> tuple[list[AgentEvent], IterationResult]:
    return feed_all(CodexStreamParser(model=model, now=lambda: now), lines, outcome or exited(0))


def replay(name: str, **kwargs: Any) -> tuple[list[AgentEvent], IterationResult]:
    """A cassette through the parser, ended as the recorded process ended."""
    recorded = sidecar(name)
    outcome = exited(recorded["exit_code"], recorded["stderr_tail"])
    return replay_lines(cassette_lines(name), outcome, **kwargs)


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj).encode()
