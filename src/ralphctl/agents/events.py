"""Normalised events parsed from an agent's output stream, as they arrive."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ralphctl.domain.model import TokenUsage

#: How much of a stray line an event carries (the transcript keeps the whole line).
RAW_LINE_CHARS = 2000
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` safe to show on a terminal: control characters (escape sequences, NUL…) but
    tabs and newlines replaced by U+FFFD."""
    return _CONTROL.sub("\ufffd", text)


@dataclass(frozen=True, slots=True)
class SessionStarted:
    session_id: str
    model: str | None = None
    agent_version: str | None = None


@dataclass(frozen=True, slots=True)
class TextChunk:
    """Assistant text to show the user as it arrives (not necessarily the final text): a whole
    text block, or with ``delta`` a piece of one that the next pieces continue."""

    text: str
    delta: bool = False


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call as it starts: the tool's name, its id, a one-line summary (file,
    command…) and whether the agent's adapter knows the tool as one that edits files (so
    no consumer needs tool names)."""

    name: str
    tool_use_id: str
    summary: str = ""
    edits_files: bool = False


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
    tool_use_id: str = ""


@dataclass(frozen=True, slots=True)
class RawLine:
    """A line outside the agent's structured stream (a warning, a stack trace, noise), as
    printable text: invalid UTF-8 and control characters replaced, at most 2000 characters."""

    text: str

    @classmethod
    def of(cls, line: bytes) -> RawLine:
        text = line[: RAW_LINE_CHARS * 4].decode("utf-8", errors="replace").rstrip("\r")
        if len(text) > RAW_LINE_CHARS:
            text = text[: RAW_LINE_CHARS - 1] + "…"
        return cls(printable(text))


@dataclass(frozen=True, slots=True)
class MessageUsage:
    """Usage of one API message as one line of the stream shows it. A message may span several
    lines (one per content block) that repeat its id and ``tokens``; ``tokens.output`` can be a
    placeholder until the message ends, so ``shown_chars`` (its text, thinking and tool input
    on this line) lets a meter estimate the output."""

    message_id: str
    model: str
    tokens: TokenUsage
    shown_chars: int


@dataclass(frozen=True, slots=True)
class UsageReported:
    """The agent's own account of its usage since its previous report (exact)."""

    tokens: TokenUsage
    cost_usd: float


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
    | MessageUsage
    | UsageReported
    | RawLine
    | Finished
)
