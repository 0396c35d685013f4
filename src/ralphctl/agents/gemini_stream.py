"""The parser of ``gemini --output-format stream-json`` (Gemini CLI 0.61.0): one JSON object
per line, into neutral events and an ``IterationResult``.

Facts it relies on, read from the pinned CLI run against a mock Gemini API (docs/agents/gemini.md):

- Lines: ``init`` (``session_id``, ``model``: ``auto`` when the CLI routes between models),
  ``message`` (``role: user`` is the prompt echoed back: never the agent's text; ``role:
  assistant`` with ``delta: true`` is a piece of the answer), ``tool_use`` (``tool_name``,
  ``tool_id``, ``parameters``), ``tool_result`` (``tool_id``, ``status``, ``output``,
  ``error{type, message}``), ``error`` (``severity`` warning|error, ``message``) and a closing
  ``result`` (``status`` success|error, ``error{type, message}``, ``stats``). A killed CLI
  prints no ``result``.
- Assistant text before and after a tool call arrives as deltas of one stream: the final text
  is what came after the last tool call.
- ``stats`` totals every model call of the run (routing calls included), per model under
  ``models``: ``input_tokens`` (prompt, cached tokens included), ``cached``, ``input``
  (prompt without the cached tokens), ``output_tokens`` (candidates, thoughts not included),
  ``total_tokens`` (thoughts included). No cost in USD.
- Headless runs refuse tools by not registering them (``tool_not_registered``) or by policy
  (``policy_violation``, e.g. plan mode refusing ``write_file``): both are permission denials.
- A failed API call ends the run with ``result.status: error``, ``error.type: unknown`` and a
  message such as ``[API Error: {"error":{"code":500,…}}]`` or, for a 429, ``[API Error:
  Resource has been exhausted…\\nSuggested retry after 1s.]``. The exit status is then the
  HTTP status modulo 256 (173 for 429, 247 for 503); the CLI's own failures exit 41 (auth),
  42 (input), 52 (config), 53 (turn limit), 54 (tool), 130 (cancelled).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.events import (
    AgentEvent,
    Finished,
    PermissionDenied,
    RateLimitSignal,
    RawLine,
    SessionStarted,
    TextChunk,
    ToolCall,
    ToolOutput,
)
from ralphctl.domain.model import (
    UNNAMED_MODEL,
    IterationResult,
    ModelTokens,
    PermissionDenial,
    RateLimitInfo,
    TokenUsage,
    ToolUse,
)

#: The tools that change files in the work dir.
EDIT_TOOLS = frozenset({"write_file", "replace"})
#: ``tool_result.error.type`` values that mean the CLI refused the call in its approval mode.
DENIAL_TYPES = frozenset({"policy_violation", "tool_not_registered"})
#: Exit statuses of the CLI's own fatal errors.
EXIT_AUTH, EXIT_TURN_LIMIT = 41, 53
#: A failed API call exits with its HTTP status modulo 256: back to the status.
_EXIT_HTTP = {status % 256: status for status in (400, 401, 403, 404, 429, 500, 502, 503, 504)}
_TEXT_LIMIT = 256 * 1024  # the final text keeps at most this many characters (its end)
_MAX_DENIALS = 100
_MAX_TOOL_USES = 200
_SUMMARY_CHARS = 80
_SUMMARY_KEYS = ("file_path", "command", "pattern", "dir_path", "path", "url", "query")
_STDERR_EXCERPT_CHARS = 500
_ERROR_CODE = re.compile(r'"code"\s*:\s*([1-5]\d\d)\b')
_QUOTA = re.compile(r"resource(?:_| has been | )exhausted|exhausted your (?:daily )?quota", re.I)
_DAILY = re.compile(r"daily quota|per ?day", re.I)
_RETRY_AFTER = re.compile(r"(?:retry after|retry in) ([0-9.]+)\s*(ms|s)\b", re.I)
_OVERLOADED = frozenset({503, 529})


class GeminiStreamParser:
    """Turns the CLI's stream-json lines into events and a result; never raises on bad input.

    Lines that are not a JSON object are counted in ``unparsed_lines`` and passed on as
    ``RawLine`` (blank ones are not); unknown line types are ignored. Memory stays bounded:
    the text since the last tool call (its last 256 KiB), the last ``result`` and error, at
    most 100 denials and 200 tool calls.
    """

    def __init__(self) -> None:
        self._session_id: str | None = None
        self._model: str | None = None
        self._text = ""
        self._result: dict[str, Any] | None = None
        self._last_error: str | None = None
        self._tool_names: dict[str, str] = {}
        self._tool_uses: list[ToolUse] = []
        self._denials: list[PermissionDenial] = []
        self._rate_limit: RateLimitInfo | None = None
        self._unparsed = 0
        self._handlers: dict[str, Callable[[dict[str, Any]], list[AgentEvent]]] = {
            "init": self._init,
            "message": self._message,
            "tool_use": self._tool_use,
            "tool_result": self._tool_result,
            "error": self._error,
            "result": self._result_line,
        }

    def feed(self, line: bytes) -> list[AgentEvent]:
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
        error = _dict(result.get("error"))
        failed = self._result is None or result.get("status") != "success"
        status = _http_status(result, outcome.exit_code) if failed else None
        per_model = _model_tokens(_dict(result.get("stats")), self._model or UNNAMED_MODEL)
        return IterationResult(
            final_text=self._text,
            is_error=(
                failed
                or outcome.exit_code not in (0, None)
                or outcome.timed_out
                or outcome.interrupted
            ),
            error_message=self._error_message(outcome),
            exit_code=outcome.exit_code,
            duration_ms=outcome.duration_ms,
            tokens=sum((entry.tokens for entry in per_model), TokenUsage()),
            cost_usd=None,
            session_id=self._session_id,
            api_error_status=status,
            permission_denials=tuple(self._denials),
            rate_limit=self._rate_limit or _rate_limit(result, status),
            stderr_tail=outcome.stderr_tail,
            timed_out=outcome.timed_out,
            interrupted=outcome.interrupted,
            unparsed_lines=self._unparsed,
            model=_main_model(self._model, per_model),
            model_tokens=per_model,
            tool_uses=tuple(self._tool_uses),
            assistant_error=_assistant_error(status, outcome.exit_code),
            terminal_reason=_terminal_reason(_str(error.get("type")), outcome.exit_code),
            truncated=self._result is None,
        )

    # --- one handler per line type ---------------------------------------------------------

    def _init(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self._session_id = _str(obj.get("session_id"))
        self._model = _str(obj.get("model"))
        return [SessionStarted(self._session_id or "", self._model)]

    def _message(self, obj: dict[str, Any]) -> list[AgentEvent]:
        text = _str(obj.get("content"))
        if obj.get("role") != "assistant" or not text:
            return []  # the prompt echo (role user) is never the agent's text
        self._text = (self._text + text)[-_TEXT_LIMIT:]
        return [TextChunk(text, delta=obj.get("delta") is True)]

    def _tool_use(self, obj: dict[str, Any]) -> list[AgentEvent]:
        name = _str(obj.get("tool_name")) or ""
        tool_id = _str(obj.get("tool_id")) or ""
        summary = summarise_parameters(obj.get("parameters"))
        edits = name in EDIT_TOOLS
        self._text = ""  # the final text is the answer after the last tool call
        if len(self._tool_uses) < _MAX_TOOL_USES:
            self._tool_uses.append(ToolUse(name, summary, edits, tool_id))
            self._tool_names[tool_id] = name
        return [ToolCall(name, tool_id, summary, edits)]

    def _tool_result(self, obj: dict[str, Any]) -> list[AgentEvent]:
        tool_id = _str(obj.get("tool_id")) or ""
        failed = obj.get("status") == "error"
        events: list[AgentEvent] = [ToolOutput(tool_id, is_error=failed)]
        error = _dict(obj.get("error"))
        if failed and error.get("type") in DENIAL_TYPES:
            name = self._tool_names.get(tool_id, "unknown")
            message = _one_line(_str(error.get("message")) or "", 300)
            if len(self._denials) < _MAX_DENIALS:
                self._denials.append(PermissionDenial(name, tool_id, message))
            events.append(PermissionDenied(name, message, tool_id))
        return events

    def _error(self, obj: dict[str, Any]) -> list[AgentEvent]:
        message = _str(obj.get("message"))
        if obj.get("severity") == "error" and message:
            self._last_error = message
        return []

    def _result_line(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self._result = obj
        failed = obj.get("status") != "success"
        events: list[AgentEvent] = []
        if failed:
            status = _http_status(obj, None)
            info = _rate_limit(obj, status)
            if info is not None:
                self._rate_limit = info
                events.append(RateLimitSignal(info.status, info.resets_at, info.limit_type))
        return [*events, Finished(is_error=failed, cost_usd=None)]

    def _error_message(self, outcome: ProcessOutcome) -> str | None:
        """Why the iteration counts as an error, in words; None when it does not."""
        problems: list[str] = []
        if outcome.timed_out:
            problems.append("timed out: the agent was stopped at the iteration timeout")
        if outcome.interrupted:
            problems.append("interrupted: the agent was stopped on request")
        result = self._result
        if result is None:
            problems.append(
                "no result line: the agent process ended without a result "
                f"(exit code {outcome.exit_code}){_stderr_excerpt(outcome.stderr_tail)}"
            )
        elif result.get("status") != "success":
            error = _dict(result.get("error"))
            message = _str(error.get("message")) or self._last_error or "no message"
            problems.append(f"the agent reported an error: {_one_line(message, 500)}")
        elif outcome.exit_code not in (0, None):
            problems.append(
                f"the agent exited with code {outcome.exit_code}"
                f"{_stderr_excerpt(outcome.stderr_tail)}"
            )
        return "; ".join(problems) or None


def summarise_parameters(parameters: object) -> str:
    """A short one-line description of a tool call: its file, command, pattern, …"""
    if not isinstance(parameters, dict):
        return ""
    preferred = (parameters.get(key) for key in _SUMMARY_KEYS)
    for value in (*preferred, *parameters.values()):
        if isinstance(value, str) and value.strip():
            return _one_line(value, _SUMMARY_CHARS)
    return ""


def _model_tokens(stats: dict[str, Any], unnamed: str) -> tuple[ModelTokens, ...]:
    """Tokens per model (models that used none left out); the run's totals, as ``unnamed``,
    when the stats name no model."""
    per_model = [
        (name, _tokens(entry))
        for name, entry in _dict(stats.get("models")).items()
        if isinstance(entry, dict)
    ]
    if not per_model and stats:
        per_model = [(unnamed, _tokens(stats))]
    return tuple(ModelTokens(name, tokens) for name, tokens in per_model if tokens != TokenUsage())


def _tokens(entry: dict[str, Any]) -> TokenUsage:
    """One ``stats`` entry as tokens: input without the cached part, output with the thoughts
    (``total_tokens`` counts them, ``output_tokens`` does not)."""
    prompt = _count(entry.get("input_tokens"))
    cached = min(_count(entry.get("cached")), prompt)
    output = max(_count(entry.get("output_tokens")), _count(entry.get("total_tokens")) - prompt)
    return TokenUsage(input=prompt - cached, output=output, cache_read=cached)


def _main_model(announced: str | None, per_model: tuple[ModelTokens, ...]) -> str | None:
    """The model that used the most tokens; the announced one (maybe ``auto``) when none did."""
    if per_model:
        return max(per_model, key=lambda entry: entry.tokens.total).model
    return announced


def _http_status(result: dict[str, Any], exit_code: int | None) -> int | None:
    """The HTTP status of a failed run's API error: stated in the message (``"code": 500``),
    else told by the exit status, else a quota message (429)."""
    message = _str(_dict(result.get("error")).get("message")) or ""
    if stated := _ERROR_CODE.search(message):
        return int(stated.group(1))
    if exit_code is not None and exit_code in _EXIT_HTTP:
        return _EXIT_HTTP[exit_code]
    return 429 if _QUOTA.search(message) else None


def _rate_limit(result: dict[str, Any], status: int | None) -> RateLimitInfo | None:
    """A 429 as a rejected rate limit: reset at the result's time plus the suggested delay."""
    if status != 429:
        return None
    message = _str(_dict(result.get("error")).get("message")) or ""
    return RateLimitInfo(
        "rejected",
        _resets_at(_str(result.get("timestamp")), message),
        "daily" if _DAILY.search(message) else None,
    )


def _resets_at(timestamp: str | None, message: str) -> float | None:
    delay = _RETRY_AFTER.search(message)
    if timestamp is None or delay is None:
        return None
    try:
        at = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
        seconds = float(delay.group(1)) / (1000 if delay.group(2).lower() == "ms" else 1)
    except (ValueError, OverflowError, OSError):
        return None
    return at + seconds


def _assistant_error(status: int | None, exit_code: int | None) -> str | None:
    """The error category the analyzer knows: overloaded (503), auth (exit 41)."""
    if status in _OVERLOADED:
        return "overloaded"
    if exit_code == EXIT_AUTH or status in (401, 403):
        return "authentication_failed"
    return None


def _terminal_reason(error_type: str | None, exit_code: int | None) -> str | None:
    if exit_code == EXIT_TURN_LIMIT or error_type == "FatalTurnLimitedError":
        return "max_turns"
    return None


def _stderr_excerpt(stderr_tail: str) -> str:
    excerpt = stderr_tail.strip()[-_STDERR_EXCERPT_CHARS:]
    return f"; stderr tail: {excerpt}" if excerpt else ""


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text[: limit * 4].split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --- tolerant accessors: the stream is input, never trusted to be well-typed -----------------


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: object) -> int:
    """A token count: a positive integer, else 0."""
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return max(value, 0)
