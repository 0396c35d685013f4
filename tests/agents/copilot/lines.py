"""Crafted Copilot JSON lines and process outcomes, for the parser and command tests."""

from __future__ import annotations

import json
from typing import Any

from ralphctl.agents.base import ProcessOutcome


def line(type_: str, data: dict[str, Any] | None = None, **fields: Any) -> bytes:
    """One line of the CLI's output: ``{"type", "data", …fields}``."""
    return json.dumps({"type": type_, "data": data or {}, **fields}).encode()


def exited(code: int | None, stderr: str = "", **flags: bool) -> ProcessOutcome:
    return ProcessOutcome(exit_code=code, duration_ms=1234, stderr_tail=stderr, **flags)


def lines_of(data: bytes) -> list[bytes]:
    """``data`` cut into lines as the process layer cuts them."""
    lines = data.split(b"\n")
    return lines[:-1] if lines[-1] == b"" else lines


RESULT_OK = line("result", sessionId="s-1", exitCode=0, usage={"premiumRequests": 0})
