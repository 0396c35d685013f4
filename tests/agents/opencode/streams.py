"""Replaying recorded ``opencode run --format json`` output through the OpenCode parser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.events import AgentEvent
from ralphctl.agents.opencode_stream import OpencodeStreamParser
from ralphctl.domain.model import IterationResult
from tests.agents.streams import feed_all, recorded_lines, recorded_sidecar

CASSETTES = Path(__file__).parents[1] / "cassettes" / "opencode"
MODEL = "mock/mock-coder"


def cassette_lines(name: str) -> list[bytes]:
    """The lines of ``cassettes/opencode/<name>.jsonl`` as the process layer cuts them."""
    return recorded_lines(CASSETTES / f"{name}.jsonl")


def sidecar(name: str) -> dict[str, Any]:
    return recorded_sidecar(CASSETTES / f"{name}.json")


def exited(code: int | None, *, stderr: str = "", **flags: bool) -> ProcessOutcome:
    return ProcessOutcome(exit_code=code, duration_ms=1000, stderr_tail=stderr, **flags)


def replay_lines(
    lines: list[bytes], outcome: ProcessOutcome | None = None, *, model: str | None = MODEL
) -> tuple[list[AgentEvent], IterationResult]:
    return feed_all(OpencodeStreamParser(model), lines, outcome or exited(0))


def replay(name: str, *, model: str | None = MODEL) -> tuple[list[AgentEvent], IterationResult]:
    """Feed a cassette through a new parser; the outcome is the recorded exit code."""
    record = sidecar(name)
    return replay_lines(
        cassette_lines(name), exited(record["exit_code"], stderr=record["stderr_tail"]), model=model
    )


def line(type_: str, **fields: Any) -> bytes:
    """One event line as opencode prints it."""
    event = {"type": type_, "timestamp": 1_795_462_000_000, "sessionID": "ses_test", **fields}
    return json.dumps(event, separators=(",", ":")).encode()
