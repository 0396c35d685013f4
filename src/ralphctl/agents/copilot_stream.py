"""The Copilot CLI's JSON lines (``--output-format json``, 1.0.102) into events and a result.

Each line is ``{"type", "data", "id", "timestamp", "parentId", "ephemeral"?}``; the run ends
with ``{"type": "result", "sessionId", "exitCode", "usage": {premiumRequests, …}}``. The lines
read here:

- ``user.message``: the prompt echoed; never text.
- ``assistant.message_delta`` (``deltaContent``) streams a message's text; ``assistant.message``
  (``content``, ``toolRequests``, ``model``) closes it. The final text is the ``content`` of the
  run's last main-thread message (a message with ``parentToolCallId`` is a subagent's).
- ``tool.execution_start`` (``toolCallId``, ``toolName``, ``arguments``) and
  ``tool.execution_complete`` (``success``; a refused call has ``error.code == "denied"``).
- ``assistant.turn_retry`` (``reason``) after ``model.call_failure`` (``statusCode``): a retry.
- ``session.error`` (``errorType``: ``rate_limit``, ``authentication``, ``query``…,
  ``statusCode``, ``message``): the run failed; its message is the final text when the agent
  said nothing after it, where a limit message is looked for.

Tokens are not in the stream: the adapter has the CLI write its usage to a file
(``--usage-output-file``), read here when the run ends and then deleted. Its
``modelMetrics.<model>.usage.inputTokens`` counts cached input too (as the OpenAI API does), so
the uncached input is ``inputTokens - cacheReadTokens``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.events import (
    AgentEvent,
    ApiRetry,
    Finished,
    PermissionDenied,
    RawLine,
    TextChunk,
    ToolCall,
    ToolOutput,
)
from ralphctl.domain.model import (
    IterationResult,
    ModelTokens,
    PermissionDenial,
    TokenUsage,
    ToolUse,
)

#: The tools that edit files (``apply_patch``: GPT-family models get it instead of ``edit``).
EDIT_TOOLS = frozenset({"create", "edit", "apply_patch", "str_replace_editor", "write"})
#: ``session.error`` types as the neutral assistant errors ``domain/analyzer`` knows.
ERROR_TYPES = {"rate_limit": "rate_limit", "authentication": "authentication_failed"}
MAX_USAGE_FILE_BYTES = 1024 * 1024

_MAX_DENIALS = 100
_MAX_TOOL_USES = 200
_SUMMARY_CHARS = 80
_SUMMARY_KEYS = ("path", "command", "pattern", "query", "url", "description", "prompt")
_STDERR_EXCERPT_CHARS = 500


#: The CLI writes ``type`` first: lines of the types nobody reads are skipped unparsed (most
#: bytes of a stream are tool output, the prompt echo and the skills list).
_TYPE_PREFIX = b'{"type":"'
_READ_TYPES = frozenset(
    {
        b"assistant.message_delta",
        b"assistant.message",
        b"tool.execution_start",
        b"tool.execution_complete",
        b"model.call_failure",
        b"assistant.turn_retry",
        b"session.error",
        b"session.tools_updated",
        b"result",
    }
)


class CopilotStreamParser:
    """Turns the CLI's JSON lines into events and a result; never raises on bad input.

    ``usage_file``: where the run's usage was written (``--usage-output-file``); without one
    (a stored transcript read again) the result has no tokens. ``earlier``: what a resumed
    session had used before this run (the file totals the session). Memory stays bounded: the last
    text and error, at most 100 denials and 200 tool calls.
    """

    def __init__(
        self, usage_file: Path | None = None, earlier: tuple[ModelTokens, ...] = ()
    ) -> None:
        self._usage_file = usage_file
        self._earlier = earlier
        self._result: dict[str, Any] | None = None
        self._text = ""
        self._text_after_error = False
        self._streamed: set[str] = set()
        self._model: str | None = None
        self._tools: dict[str, str] = {}  # toolCallId -> tool name, for denials
        self._tool_uses: list[ToolUse] = []
        self._denials: list[PermissionDenial] = []
        self._error: dict[str, Any] | None = None
        self._last_failure_status: int | None = None
        self._retries = 0
        self._unparsed = 0
        self._handlers: dict[str, Callable[[dict[str, Any]], list[AgentEvent]]] = {
            "assistant.message_delta": self._delta,
            "assistant.message": self._message,
            "tool.execution_start": self._tool_start,
            "tool.execution_complete": self._tool_complete,
            "model.call_failure": self._call_failure,
            "assistant.turn_retry": self._turn_retry,
            "session.error": self._session_error,
            "session.tools_updated": self._tools_updated,
            "result": self._result_line,
        }

    def feed(self, line: bytes) -> list[AgentEvent]:
        if line.startswith(_TYPE_PREFIX):
            end = line.find(b'"', len(_TYPE_PREFIX))
            if line[len(_TYPE_PREFIX) : end] not in _READ_TYPES:
                return []  # skills, tool output, deltas of tool calls…: not parsed at all
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            self._unparsed += 1
            return [RawLine.of(line)] if line.strip() else []
        kind = obj.get("type")
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        return handler(obj) if handler else []

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        result = self._result or {}
        exit_code = _int(result.get("exitCode"))
        per_model = _less(read_usage(self._usage_file), self._earlier)
        is_error = (
            self._result is None
            or exit_code not in (0, None)
            or outcome.exit_code not in (0, None)
            or outcome.timed_out
            or outcome.interrupted
        )
        # A session error the run got over (it still ended well) is not the run's error.
        error = (self._error or {}) if is_error else {}
        return IterationResult(
            final_text=self._final_text(failed=is_error),
            is_error=is_error,
            error_message=self._error_message(outcome, exit_code) if is_error else None,
            exit_code=outcome.exit_code,
            duration_ms=outcome.duration_ms,
            tokens=sum((entry.tokens for entry in per_model), TokenUsage()),
            cost_usd=None,
            session_id=_str(result.get("sessionId")),
            api_error_status=_int(error.get("statusCode")),
            permission_denials=tuple(self._denials),
            stderr_tail=outcome.stderr_tail,
            timed_out=outcome.timed_out,
            interrupted=outcome.interrupted,
            unparsed_lines=self._unparsed,
            model=self._model or (per_model[0].model if per_model else None),
            model_tokens=per_model,
            tool_uses=tuple(self._tool_uses),
            assistant_error=_assistant_error(error),
            terminal_reason=_str(error.get("errorType")),
            truncated=self._result is None,
        )

    # --- one handler per line type ---------------------------------------------------------

    def _delta(self, obj: dict[str, Any]) -> list[AgentEvent]:
        data = _dict(obj.get("data"))
        text = _str(data.get("deltaContent"))
        if not text or data.get("parentToolCallId") is not None:
            return []
        self._streamed.add(_str(data.get("messageId")) or "")
        return [TextChunk(text, delta=True)]

    def _message(self, obj: dict[str, Any]) -> list[AgentEvent]:
        data = _dict(obj.get("data"))
        if data.get("parentToolCallId") is not None:
            return []
        self._model = _str(data.get("model")) or self._model
        self._text = _str(data.get("content")) or ""
        self._text_after_error = self._error is not None
        message_id = _str(data.get("messageId")) or ""
        if self._text and message_id not in self._streamed:
            return [TextChunk(self._text)]
        return []

    def _tool_start(self, obj: dict[str, Any]) -> list[AgentEvent]:
        data = _dict(obj.get("data"))
        name = _str(data.get("toolName")) or ""
        call_id = _str(data.get("toolCallId")) or ""
        summary = summarise_arguments(data.get("arguments"))
        edits = name in EDIT_TOOLS
        if len(self._tools) < _MAX_TOOL_USES:
            self._tools[call_id] = name
        if len(self._tool_uses) < _MAX_TOOL_USES:
            self._tool_uses.append(ToolUse(name, summary, edits, call_id))
        return [ToolCall(name, call_id, summary, edits)]

    def _tool_complete(self, obj: dict[str, Any]) -> list[AgentEvent]:
        data = _dict(obj.get("data"))
        call_id = _str(data.get("toolCallId")) or ""
        events: list[AgentEvent] = [ToolOutput(call_id, data.get("success") is not True)]
        error = _dict(data.get("error"))
        if error.get("code") == "denied":
            name = self._tools.get(call_id, "unknown")
            message = _str(error.get("message")) or ""
            if len(self._denials) < _MAX_DENIALS:
                self._denials.append(PermissionDenial(name, call_id, message))
            events.append(PermissionDenied(name, message, call_id))
        return events

    def _call_failure(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self._last_failure_status = _int(_dict(obj.get("data")).get("statusCode"))
        return []

    def _turn_retry(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self._retries += 1
        reason = _str(_dict(obj.get("data")).get("reason"))
        return [ApiRetry(self._retries, None, self._last_failure_status, reason)]

    def _session_error(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self._error = _dict(obj.get("data"))
        self._text_after_error = False
        return []

    def _tools_updated(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self._model = _str(_dict(obj.get("data")).get("model")) or self._model
        return []

    def _result_line(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self._result = obj
        failed = _int(obj.get("exitCode")) not in (0, None)
        return [Finished(is_error=failed, cost_usd=None)]

    # --- the result ------------------------------------------------------------------------

    def _final_text(self, *, failed: bool) -> str:
        """The last main-thread message's text; in a failed run, after a ``session.error``
        that no message followed, the error's message (the CLI's last word, where a limit is
        stated)."""
        if failed and self._error is not None and not self._text_after_error:
            return _str(self._error.get("message")) or self._text
        return self._text

    def _error_message(self, outcome: ProcessOutcome, exit_code: int | None) -> str:
        problems: list[str] = []
        if outcome.timed_out:
            problems.append("timed out: the agent was stopped at the iteration timeout")
        if outcome.interrupted:
            problems.append("interrupted: the agent was stopped on request")
        if self._error is not None and (self._result is None or exit_code not in (0, None)):
            status = _int(self._error.get("statusCode"))
            kind = _str(self._error.get("errorType")) or "error"
            said = _one_line(_str(self._error.get("message")) or "", 300)
            where = f"API error status {status}, " if status is not None else ""
            problems.append(f"the agent reported an error: {where}{kind}: {said}")
        elif self._result is None:
            problems.append(
                "no result line: the agent process ended without a result "
                f"(exit code {outcome.exit_code}){_stderr_excerpt(outcome.stderr_tail)}"
            )
        elif exit_code not in (0, None) or outcome.exit_code not in (0, None):
            code = exit_code if exit_code not in (0, None) else outcome.exit_code
            problems.append(
                f"the agent exited with code {code}{_stderr_excerpt(outcome.stderr_tail)}"
            )
        return "; ".join(problems) or "the agent reported an error"


def read_usage(path: Path | None) -> tuple[ModelTokens, ...]:
    """Tokens per model from a usage file the CLI wrote, which is then deleted; empty when
    there is none (the run died first) or it cannot be read."""
    if path is None:
        return ()
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_USAGE_FILE_BYTES + 1)
    except OSError:
        return ()
    finally:
        path.unlink(missing_ok=True)
    if len(raw) > MAX_USAGE_FILE_BYTES:
        return ()
    try:
        usage = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return ()
    return usage_tokens(usage)


def _less(
    totals: tuple[ModelTokens, ...], earlier: tuple[ModelTokens, ...]
) -> tuple[ModelTokens, ...]:
    """``totals`` less what ``earlier`` runs of the session used, per model."""
    before = {entry.model: entry.tokens for entry in earlier}
    if not before:
        return totals
    return tuple(
        ModelTokens(entry.model, _minus(entry.tokens, before.get(entry.model))) for entry in totals
    )


def _minus(tokens: TokenUsage, earlier: TokenUsage | None) -> TokenUsage:
    if earlier is None:
        return tokens
    return TokenUsage(
        input=max(0, tokens.input - earlier.input),
        output=max(0, tokens.output - earlier.output),
        cache_read=max(0, tokens.cache_read - earlier.cache_read),
        cache_write=max(0, tokens.cache_write - earlier.cache_write),
    )


def usage_tokens(usage: object) -> tuple[ModelTokens, ...]:
    """``modelMetrics`` of a usage record as tokens per model (uncached input)."""
    per_model: list[ModelTokens] = []
    for model, metrics in _dict(_dict(usage).get("modelMetrics")).items():
        counts = _dict(_dict(metrics).get("usage"))
        cache_read = _count(counts.get("cacheReadTokens"))
        tokens = TokenUsage(
            input=max(0, _count(counts.get("inputTokens")) - cache_read),
            output=_count(counts.get("outputTokens")),
            cache_read=cache_read,
            cache_write=_count(counts.get("cacheWriteTokens")),
        )
        per_model.append(ModelTokens(str(model), tokens))
    return tuple(per_model)


def summarise_arguments(arguments: object) -> str:
    """A short one-line description of a tool call: its path, command, pattern, …"""
    if isinstance(arguments, str):
        return _one_line(arguments, _SUMMARY_CHARS)
    if not isinstance(arguments, dict):
        return ""
    preferred = (arguments.get(key) for key in _SUMMARY_KEYS)
    for value in (*preferred, *arguments.values()):
        if isinstance(value, str) and value.strip():
            return _one_line(value, _SUMMARY_CHARS)
    return ""


def _assistant_error(error: dict[str, Any]) -> str | None:
    kind = _str(error.get("errorType"))
    return None if kind is None else ERROR_TYPES.get(kind, kind)


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
    """A token count: a positive integer, else 0."""
    number = _int(value)
    return number if number is not None and number > 0 else 0
