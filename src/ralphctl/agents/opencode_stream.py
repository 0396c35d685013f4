"""The parser of ``opencode run --format json``: one JSON object per line.

Facts it relies on (opencode-ai 1.18.33, docs/agents/opencode.md):
- every line is ``{type, timestamp, sessionID, …}``; ``part`` carries a message part;
- ``step_start`` opens a step (one assistant message, ``part.messageID``); ``step_finish``
  closes it with ``part.tokens {input, output, reasoning, cache {read, write}}`` and
  ``part.cost`` (USD; 0 when the provider has no prices, e.g. a custom one);
- ``text`` is a whole text part, printed once it is complete; ``reasoning`` only with
  ``--thinking``;
- ``tool_use`` is printed once a tool call ended (``state.status`` completed or error); a
  refused call is an error whose text says so (``PERMISSION_REFUSALS``);
- ``error`` (``error {name, data {message, statusCode, isRetryable, responseHeaders}}``) is a
  session error, printed after opencode's own retries (five, honouring ``retry-after``);
  the process then exits 1. There is no closing record: a run ends after its last
  ``step_finish`` (or ``error``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import orjson

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.events import (
    AgentEvent,
    MessageUsage,
    PermissionDenied,
    RateLimitSignal,
    RawLine,
    SessionStarted,
    TextChunk,
    ToolCall,
    ToolOutput,
    UsageReported,
)
from ralphctl.domain.model import (
    IterationResult,
    ModelTokens,
    PermissionDenial,
    RateLimitInfo,
    TokenUsage,
    ToolUse,
)

#: The tools that edit files (``apply_patch`` replaces edit/write for GPT models).
EDIT_TOOLS = frozenset({"write", "edit", "multiedit", "patch", "apply_patch"})
#: The error texts of a tool call that a permission rule refused (``deny``) or that was
#: auto-rejected because it needed an answer nobody can give headless (``ask``).
PERMISSION_REFUSALS = re.compile(
    r"^The user (?:rejected permission|has specified a rule which prevents)"
)
_OVERLOADED_STATUSES = frozenset({503, 529})
_MAX_DENIALS = 100
_MAX_TOOL_USES = 200
_SUMMARY_CHARS = 80
_SUMMARY_KEYS = ("filePath", "command", "pattern", "path", "url", "query", "description")
_STDERR_EXCERPT_CHARS = 500
#: opencode's error names, as the neutral ``assistant_error`` words ``classify_error`` reads.
_ERROR_NAMES = {
    "ProviderAuthError": "authentication_failed",
    "MessageOutputLengthError": "max_output_tokens",
    "ContextOverflowError": "context_overflow",
    "MessageAbortedError": "aborted",
}


class OpencodeStreamParser:
    """Turns ``opencode run --format json`` lines into events and an ``IterationResult``.

    ``model`` is the model the run was asked to use (opencode's events do not name it); it
    names the tokens for pricing when opencode reports no cost. Never raises on bad input;
    memory stays bounded (the last step's text, at most 100 denials and 200 tool calls).
    """

    def __init__(self, model: str | None = None) -> None:
        self._model = model
        self._session_id: str | None = None
        self._step_open = False
        self._steps = 0
        self._message_id: str | None = None
        self._texts: list[str] = []
        self._tokens = TokenUsage()
        self._cost = 0.0
        self._errors: list[str] = []
        self._status: int | None = None
        self._assistant_error: str | None = None
        self._rate_limit: RateLimitInfo | None = None
        self._finish_reason: str | None = None
        self._denials: list[PermissionDenial] = []
        self._tool_uses: list[ToolUse] = []
        self._unparsed = 0
        self._handlers: dict[str, Callable[[dict[str, Any]], list[AgentEvent]]] = {
            "step_start": self._step_start,
            "step_finish": self._step_finish,
            "text": self._text,
            "tool_use": self._tool_use,
            "error": self._error,
        }

    @property
    def model(self) -> str | None:
        """The model the run was asked to use, if known."""
        return self._model

    def feed(self, line: bytes) -> list[AgentEvent]:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            self._unparsed += 1
            return [RawLine.of(line)] if line.strip() else []
        events: list[AgentEvent] = []
        session_id = _str(obj.get("sessionID"))
        if session_id and self._session_id is None:
            self._session_id = session_id
            events.append(SessionStarted(session_id, self._model))
        kind = obj.get("type")
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        return events + handler(obj) if handler else events

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        truncated = self._step_open or (self._steps == 0 and not self._errors)
        return IterationResult(
            final_text="\n".join(self._texts),
            is_error=bool(self._errors)
            or outcome.exit_code not in (0, None)
            or outcome.timed_out
            or outcome.interrupted
            or truncated,
            error_message=self._error_message(outcome, truncated),
            exit_code=outcome.exit_code,
            duration_ms=outcome.duration_ms,
            tokens=self._tokens,
            cost_usd=self._cost if self._cost > 0 else None,
            session_id=self._session_id,
            num_turns=self._steps or None,
            api_error_status=self._status,
            permission_denials=tuple(self._denials),
            rate_limit=self._rate_limit,
            stderr_tail=outcome.stderr_tail,
            timed_out=outcome.timed_out,
            interrupted=outcome.interrupted,
            unparsed_lines=self._unparsed,
            model=self._model,
            model_tokens=(ModelTokens(self._model, self._tokens),) if self._model else (),
            tool_uses=tuple(self._tool_uses),
            assistant_error=self._assistant_error,
            terminal_reason=self._finish_reason,
            truncated=truncated,
        )

    # --- one handler per line type ---------------------------------------------------------

    def _step_start(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self._step_open = True
        self._enter_message(_str(_dict(obj.get("part")).get("messageID")))
        return []

    def _step_finish(self, obj: dict[str, Any]) -> list[AgentEvent]:
        part = _dict(obj.get("part"))
        self._step_open = False
        self._steps += 1
        self._finish_reason = _str(part.get("reason"))
        raw = _dict(part.get("tokens"))
        cache = _dict(raw.get("cache"))
        tokens = TokenUsage(
            input=_count(raw.get("input")),
            output=_count(raw.get("output")) + _count(raw.get("reasoning")),
            cache_read=_count(cache.get("read")),
            cache_write=_count(cache.get("write")),
        )
        self._tokens += tokens
        message_id = _str(part.get("messageID")) or f"step-{self._steps}"
        events: list[AgentEvent] = [MessageUsage(message_id, self._model or "", tokens, 0)]
        cost = _num(part.get("cost"))
        if cost is not None and cost > 0:
            self._cost += cost
            events.append(UsageReported(tokens, cost))
        return events

    def _text(self, obj: dict[str, Any]) -> list[AgentEvent]:
        part = _dict(obj.get("part"))
        text = _str(part.get("text"))
        if text is None:
            return []
        self._enter_message(_str(part.get("messageID")))
        self._texts.append(text)
        return [TextChunk(text)]

    def _tool_use(self, obj: dict[str, Any]) -> list[AgentEvent]:
        part = _dict(obj.get("part"))
        state = _dict(part.get("state"))
        name = _str(part.get("tool")) or "unknown"
        call_id = _str(part.get("callID")) or _str(part.get("id")) or ""
        summary = summarise_tool_input(state.get("input"))
        edits_files = name in EDIT_TOOLS
        if len(self._tool_uses) < _MAX_TOOL_USES:
            self._tool_uses.append(ToolUse(name, summary, edits_files, call_id))
        failed = state.get("status") == "error"
        events: list[AgentEvent] = [
            ToolCall(name, call_id, summary, edits_files),
            ToolOutput(call_id, failed),
        ]
        refusal = _str(state.get("error")) if failed else None
        if refusal is not None and PERMISSION_REFUSALS.match(refusal):
            if len(self._denials) < _MAX_DENIALS:
                self._denials.append(PermissionDenial(name, call_id, summary))
            events.append(PermissionDenied(name, _one_line(refusal, 300), call_id))
        return events

    def _error(self, obj: dict[str, Any]) -> list[AgentEvent]:
        error = _dict(obj.get("error"))
        data = _dict(error.get("data"))
        name = _str(error.get("name")) or "error"
        message = _str(data.get("message")) or name
        status = _int(data.get("statusCode"))
        self._errors.append(f"{name}: {_one_line(message, 300)}")
        self._status = status if status is not None else self._status
        self._assistant_error = _assistant_error(name, status, message)
        if status != 429:
            return []
        resets_at = _reset_time(data.get("responseHeaders"), _num(obj.get("timestamp")))
        self._rate_limit = RateLimitInfo("rejected", resets_at)
        return [RateLimitSignal("rejected", resets_at, None)]

    def _enter_message(self, message_id: str | None) -> None:
        """A new assistant message starts: the final text is the last message's alone."""
        if message_id != self._message_id:
            self._message_id = message_id
            self._texts = []

    def _error_message(self, outcome: ProcessOutcome, truncated: bool) -> str | None:
        problems: list[str] = []
        if outcome.timed_out:
            problems.append("timed out: the agent was stopped at the iteration timeout")
        if outcome.interrupted:
            problems.append("interrupted: the agent was stopped on request")
        if self._errors:
            status = f" (API error status {self._status})" if self._status is not None else ""
            problems.append(f"the agent reported an error{status}: {'; '.join(self._errors)}")
        elif truncated:
            problems.append(
                "no finished step: the agent process ended before finishing its work "
                f"(exit code {outcome.exit_code}){_stderr_excerpt(outcome.stderr_tail)}"
            )
        elif outcome.exit_code not in (0, None):
            problems.append(
                f"the agent exited with code {outcome.exit_code}"
                f"{_stderr_excerpt(outcome.stderr_tail)}"
            )
        return "; ".join(problems) or None


def summarise_tool_input(tool_input: object) -> str:
    """A short one-line description of a tool call: its file, command, pattern, …"""
    if not isinstance(tool_input, dict):
        return ""
    preferred = (tool_input.get(key) for key in _SUMMARY_KEYS)
    for value in (*preferred, *tool_input.values()):
        if isinstance(value, str) and value.strip():
            return _one_line(value, _SUMMARY_CHARS)
    return ""


def _assistant_error(name: str, status: int | None, message: str) -> str | None:
    """The neutral error word for ``classify_error`` (None: the status alone decides)."""
    if name in _ERROR_NAMES:
        return _ERROR_NAMES[name]
    if status == 429:
        return "rate_limit"
    if status in _OVERLOADED_STATUSES or "overloaded" in message.lower():
        return "overloaded"
    if status in (401, 403):
        return "authentication_failed"
    return None


def _reset_time(headers: object, timestamp_ms: float | None) -> float | None:
    """When a 429 says to come back: ``retry-after-ms`` or ``retry-after`` (seconds) after
    the event's time; None without either."""
    found = _dict(headers)
    lowered = {str(k).lower(): v for k, v in found.items()}
    if timestamp_ms is None:
        return None
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            wait = float(lowered[key]) * scale
        except (KeyError, TypeError, ValueError):
            continue
        if wait >= 0:
            return timestamp_ms / 1000 + wait
    return None


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text[: limit * 4].split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _stderr_excerpt(stderr_tail: str) -> str:
    excerpt = stderr_tail.strip()[-_STDERR_EXCERPT_CHARS:]
    return f"; stderr tail: {excerpt}" if excerpt else ""


# --- tolerant accessors: the stream is input, never trusted to be well-typed -----------------


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _count(value: object) -> int:
    number = _int(value)
    return number if number is not None and number > 0 else 0


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None
