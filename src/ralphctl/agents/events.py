"""Normalised events parsed from an agent's output stream, as they arrive."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SessionStarted:
    session_id: str
    model: str | None = None
    agent_version: str | None = None


@dataclass(frozen=True, slots=True)
class TextChunk:
    """Assistant text to show the user as it arrives (not necessarily the final text)."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    tool_use_id: str
    summary: str = ""


@dataclass(frozen=True, slots=True)
class ToolOutput:
    tool_use_id: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class ApiRetry:
    attempt: int
    max_retries: int | None
    error_status: int | None
    error: str | None


@dataclass(frozen=True, slots=True)
class RateLimitSignal:
    status: str
    resets_at: float | None
    limit_type: str | None


@dataclass(frozen=True, slots=True)
class PermissionDenied:
    tool_name: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class Finished:
    """The agent's own end-of-run record arrived (e.g. Claude's ``result`` line)."""

    is_error: bool
    cost_usd: float | None


AgentEvent = (
    SessionStarted
    | TextChunk
    | ToolCall
    | ToolOutput
    | ApiRetry
    | RateLimitSignal
    | PermissionDenied
    | Finished
)
