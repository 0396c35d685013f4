"""Claude Code's ``--output-format stream-json --verbose`` lines: events and a result.

Facts this module relies on (CLI 2.1.330, see research/claude-protocol.md §3):
- One ``assistant`` line per content block; blocks of one message share ``message.id`` and
  repeat its ``usage``. Token and cost totals are therefore read from the ``result`` line only.
- The ``result`` line is the last one when the run ends normally. A killed CLI prints none.
  ``subtype: "success"`` can carry ``is_error: true`` (API errors): judge by ``is_error``.
- Key order is not fixed (the real ``result`` line has ``type`` near its end), so lines are
  classified by parsing them; only large ``user`` lines get a shortcut (``_fast_tool_outputs``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.events import (
    AgentEvent,
    ApiRetry,
    Finished,
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

#: The tools that edit files: an iteration that used one changed something.
EDIT_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})

_MAX_DENIALS = 100
_MAX_TOOL_USES = 200
_SUMMARY_CHARS = 80
_SUMMARY_KEYS = (
    "file_path",
    "command",
    "pattern",
    "path",
    "notebook_path",
    "url",
    "query",
    "description",
    "prompt",
)
_STDERR_EXCERPT_CHARS = 500
_API_ERROR_TEXT = re.compile(r"API Error: (?:Request rejected \()?([1-5]\d\d)\b")

# Most bytes of a real stream are ``user`` lines echoing tool output (whole files, twice: in
# the tool_result and in ``tool_use_result``). From a few KB on, searching them for the few
# keys that matter beats parsing them (bench/parse_throughput.py: about 2x on such lines).
_FAST_PATH_MIN_BYTES = 4 * 1024
_USER_LINE_PREFIX = b'{"type":"user","message":{'
_TOOL_USE_RESULT_KEY = b'"tool_use_result":'
_TOOL_USE_ID_KEY = b'"tool_use_id":"'
_TOOL_RESULT_TYPE = b'"type":"tool_result"'
_IS_ERROR_TRUE = b'"is_error":true'


class ClaudeStreamParser:
    """Turns ``claude -p --output-format stream-json --verbose`` lines into events and a result.

    Never raises on bad input: lines that are not a JSON object are counted in
    ``unparsed_lines`` and passed on as ``RawLine`` events (blank ones are not); unknown event
    types are ignored. If several ``result`` lines come, the last one wins (the CLI's totals
    are cumulative). Memory stays bounded: only the last
    main-thread text and assistant error, the last ``result`` object, init facts, the last
    rate-limit info, at most 100 permission denials and at most 200 tool calls are kept.
    """

    def __init__(self) -> None:
        self._init_session_id: str | None = None
        self._agent_version: str | None = None
        self._model: str | None = None
        self._result: dict[str, Any] | None = None
        self._text: str = ""
        self._text_message_id: str | None = None
        self._streamed_message_id: str | None = None
        self._streamed_text = False
        self._denials: list[PermissionDenial] = []
        self._rate_limit: RateLimitInfo | None = None
        self._assistant_error: str | None = None
        self._tool_uses: list[ToolUse] = []
        self._unparsed = 0
        self._handlers: dict[str, Callable[[dict[str, Any]], list[AgentEvent]]] = {
            "system": self._system,
            "assistant": self._assistant,
            "user": self._user,
            "stream_event": self._stream_event,
            "rate_limit_event": self._rate_limit_event,
            "result": self._result_line,
        }

    def feed(self, line: bytes) -> list[AgentEvent]:
        if len(line) >= _FAST_PATH_MIN_BYTES and line.startswith(_USER_LINE_PREFIX):
            events = _fast_tool_outputs(line)
            if events is not None:
                return events
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            self._unparsed += 1
            return [RawLine.of(line)] if line.strip() else []
        return self.feed_object(obj)

    def feed_object(self, obj: dict[str, Any]) -> list[AgentEvent]:
        """The events of one line already decoded to a JSON object: for the parser of a
        stream in this format that reads more of a line than this one does (Amp's)."""
        kind = obj.get("type")
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        return handler(obj) if handler else []

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        result = self._result or {}
        reported_text = _str(result.get("result"))
        exited_badly = outcome.exit_code not in (0, None)
        return IterationResult(
            final_text=self._text if reported_text is None else reported_text,
            is_error=(
                self._result is None
                or result.get("is_error") is True
                or exited_badly
                or outcome.timed_out
                or outcome.interrupted
            ),
            error_message=_error_message(self._result, outcome),
            exit_code=outcome.exit_code,
            duration_ms=outcome.duration_ms,
            tokens=_tokens(result),
            cost_usd=_num(result.get("total_cost_usd")),
            session_id=_str(result.get("session_id")) or self._init_session_id,
            num_turns=_int(result.get("num_turns")),
            api_error_status=_api_error_status(result),
            permission_denials=(
                _result_denials(result) if self._result is not None else tuple(self._denials)
            ),
            rate_limit=self._rate_limit,
            stderr_tail=outcome.stderr_tail,
            timed_out=outcome.timed_out,
            interrupted=outcome.interrupted,
            unparsed_lines=self._unparsed,
            agent_version=self._agent_version,
            model=self._model,
            model_tokens=_model_tokens(result),
            tool_uses=tuple(self._tool_uses),
            assistant_error=self._assistant_error,
            terminal_reason=_str(result.get("terminal_reason")),
            truncated=self._result is None,
        )

    # --- one handler per line type ---------------------------------------------------------

    def _system(self, obj: dict[str, Any]) -> list[AgentEvent]:
        subtype = obj.get("subtype")
        if subtype == "init":
            self._init_session_id = _str(obj.get("session_id"))
            self._agent_version = _str(obj.get("claude_code_version"))
            self._model = _str(obj.get("model"))
            return [SessionStarted(self._init_session_id or "", self._model, self._agent_version)]
        if subtype == "api_retry":
            return [
                ApiRetry(
                    attempt=_int(obj.get("attempt")) or 0,
                    max_retries=_int(obj.get("max_retries")),
                    error_status=_int(obj.get("error_status")),
                    error=_str(obj.get("error")),
                )
            ]
        if subtype == "permission_denied":
            tool = _str(obj.get("tool_name")) or "unknown"
            message = _str(obj.get("message")) or ""
            tool_use_id = _str(obj.get("tool_use_id")) or ""
            if len(self._denials) < _MAX_DENIALS:
                self._denials.append(PermissionDenial(tool, tool_use_id, message))
            return [PermissionDenied(tool, message, tool_use_id)]
        return []

    def _assistant(self, obj: dict[str, Any]) -> list[AgentEvent]:
        message = _dict(obj.get("message"))
        message_id = _str(message.get("id"))
        main_thread = obj.get("parent_tool_use_id") is None
        already_streamed = self._streamed_text and self._streamed_message_id in (None, message_id)
        if main_thread:
            self._assistant_error = _str(obj.get("error"))
        events: list[AgentEvent] = []
        for block in _list(message.get("content")):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and main_thread:
                text = _str(block.get("text"))
                if text is not None:
                    self._remember_text(message_id, text)
                    if not already_streamed:
                        events.append(TextChunk(text))
            elif kind == "tool_use":
                name = _str(block.get("name")) or ""
                tool_use_id = _str(block.get("id")) or ""
                summary = summarise_tool_input(block.get("input"))
                edits_files = name in EDIT_TOOLS
                if len(self._tool_uses) < _MAX_TOOL_USES:
                    self._tool_uses.append(ToolUse(name, summary, edits_files, tool_use_id))
                events.append(ToolCall(name, tool_use_id, summary, edits_files))
        if message_id is not None:
            events.append(_message_usage(message_id, message))
        return events

    def _user(self, obj: dict[str, Any]) -> list[AgentEvent]:
        content = _dict(obj.get("message")).get("content")
        return [
            ToolOutput(_str(block.get("tool_use_id")) or "", block.get("is_error") is True)
            for block in _list(content)
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]

    def _stream_event(self, obj: dict[str, Any]) -> list[AgentEvent]:
        if obj.get("parent_tool_use_id") is not None:
            return []
        event = _dict(obj.get("event"))
        kind = event.get("type")
        if kind == "message_start":
            self._streamed_message_id = _str(_dict(event.get("message")).get("id"))
            self._streamed_text = False
        elif kind == "content_block_delta":
            delta = _dict(event.get("delta"))
            text = _str(delta.get("text"))
            if delta.get("type") == "text_delta" and text:
                self._streamed_text = True
                return [TextChunk(text, delta=True)]
        return []

    def _rate_limit_event(self, obj: dict[str, Any]) -> list[AgentEvent]:
        info = _dict(obj.get("rate_limit_info"))
        status = _str(info.get("status"))
        if status is None:
            return []
        resets_at = _num(info.get("resetsAt"))
        limit_type = _str(info.get("rateLimitType"))
        self._rate_limit = RateLimitInfo(status, resets_at, limit_type)
        return [RateLimitSignal(status, resets_at, limit_type)]

    def _result_line(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self._result = obj
        reported = _usage_since_last_result(obj)
        finished = Finished(obj.get("is_error") is True, _num(obj.get("total_cost_usd")))
        return [finished] if reported is None else [reported, finished]

    def _remember_text(self, message_id: str | None, text: str) -> None:
        """Keep the text of the last main-thread message (its text blocks, one per line)."""
        if message_id is not None and message_id == self._text_message_id:
            self._text = f"{self._text}\n{text}"
        else:
            self._text_message_id = message_id
            self._text = text


def _fast_tool_outputs(line: bytes) -> list[AgentEvent] | None:
    """The events of a large ``user`` line, found without decoding its huge strings.

    Only for lines shaped like the CLI's (``{"type":"user","message":{…},…,
    "tool_use_result":…}``, compact, one tool_result); anything else returns None and is parsed
    normally. Byte search is safe here because inside a JSON string every ``"`` is escaped:
    ``"tool_use_id":"`` or ``"is_error":true`` can only be real keys, whatever the key order
    inside the block. The search stops at ``"tool_use_result":``, so the structured copy of the
    tool output is never looked at.
    """
    if not line.endswith((b"}", b"}\r")):
        return None
    end = line.find(_TOOL_USE_RESULT_KEY)
    end = len(line) if end < 0 else end
    ids = line.count(_TOOL_USE_ID_KEY, 0, end)
    is_tool_result = line.find(_TOOL_RESULT_TYPE, 0, end) >= 0
    if ids == 0 and not is_tool_result:
        return []
    if ids != 1 or not is_tool_result:
        return None
    start = line.find(_TOOL_USE_ID_KEY, 0, end) + len(_TOOL_USE_ID_KEY)
    stop = line.find(b'"', start, end)
    if stop < 0:
        return None
    raw_id = line[start:stop]
    if b"\\" in raw_id:  # an escaped id: let the full parser decode it
        return None
    try:
        tool_use_id = raw_id.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return [ToolOutput(tool_use_id, line.find(_IS_ERROR_TRUE, 0, end) >= 0)]


def _message_usage(message_id: str, message: dict[str, Any]) -> MessageUsage:
    """The usage an ``assistant`` line repeats for its message (input and cache tokens exact,
    ``output_tokens`` a placeholder until the message ends) and the output it shows."""
    usage = _dict(message.get("usage"))
    tokens = TokenUsage(
        input=_count(usage.get("input_tokens")),
        output=_count(usage.get("output_tokens")),
        cache_read=_count(usage.get("cache_read_input_tokens")),
        cache_write=_count(usage.get("cache_creation_input_tokens")),
    )
    shown = sum(_shown_chars(block) for block in _list(message.get("content")))
    return MessageUsage(message_id, _str(message.get("model")) or "", tokens, shown)


def _shown_chars(block: object) -> int:
    """How much output a content block shows: its text, thinking or tool input."""
    if not isinstance(block, dict):
        return 0
    kind = block.get("type")
    if kind in ("text", "thinking"):
        text = block.get(kind)
        return len(text) if isinstance(text, str) else 0
    if kind == "tool_use":
        return len(orjson.dumps(block.get("input"))) + len(str(block.get("name", "")))
    return 0


def _usage_since_last_result(result: dict[str, Any]) -> UsageReported | None:
    """A ``result`` line's ``model_usage_since_last_result`` (a session's later results
    repeat its totals; this is what the last run added), if every model has a ``costUSD``."""
    per_model = result.get("model_usage_since_last_result")
    if not isinstance(per_model, dict):
        return None
    tokens, cost = TokenUsage(), 0.0
    for entry in per_model.values():
        usage = _dict(entry)
        usd = _num(usage.get("costUSD"))
        if usd is None:
            return None
        cost += usd
        tokens += TokenUsage(
            input=_count(usage.get("inputTokens")),
            output=_count(usage.get("outputTokens")),
            cache_read=_count(usage.get("cacheReadInputTokens")),
            cache_write=_count(usage.get("cacheCreationInputTokens")),
        )
    return UsageReported(tokens, cost)


def summarise_tool_input(tool_input: object) -> str:
    """A short one-line description of a tool call: its file, command, pattern, …"""
    if not isinstance(tool_input, dict):
        return ""
    preferred = (tool_input.get(key) for key in _SUMMARY_KEYS)
    for value in (*preferred, *tool_input.values()):
        if isinstance(value, str) and value.strip():
            return _one_line(value, _SUMMARY_CHARS)
    return ""


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text[: limit * 4].split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _tokens(result: dict[str, Any]) -> TokenUsage:
    """Token totals of the run, from the ``result`` line.

    ``modelUsage`` (per model) is preferred: it covers every model the run used, subagents and
    the CLI's small helper model included, so it adds up to ``total_cost_usd``. ``usage``
    covers the main loop only and undercounts; it is the fallback for CLIs without
    ``modelUsage``.
    """
    per_model = _model_tokens(result)
    if per_model:
        return sum((entry.tokens for entry in per_model), TokenUsage())
    usage = _dict(result.get("usage"))
    return TokenUsage(
        input=_int(usage.get("input_tokens")) or 0,
        output=_int(usage.get("output_tokens")) or 0,
        cache_read=_int(usage.get("cache_read_input_tokens")) or 0,
        cache_write=_int(usage.get("cache_creation_input_tokens")) or 0,
    )


def _model_tokens(result: dict[str, Any]) -> tuple[ModelTokens, ...]:
    """Tokens per model from the ``result`` line's ``modelUsage`` (empty on older CLIs)."""
    return tuple(
        ModelTokens(
            model,
            TokenUsage(
                input=_int(u.get("inputTokens")) or 0,
                output=_int(u.get("outputTokens")) or 0,
                cache_read=_int(u.get("cacheReadInputTokens")) or 0,
                cache_write=_int(u.get("cacheCreationInputTokens")) or 0,
            ),
        )
        for model, u in _dict(result.get("modelUsage")).items()
        if isinstance(u, dict)
    )


def _result_denials(result: dict[str, Any]) -> tuple[PermissionDenial, ...]:
    return tuple(
        PermissionDenial(
            tool_name=_str(d.get("tool_name")) or "unknown",
            tool_use_id=_str(d.get("tool_use_id")) or "",
            detail=summarise_tool_input(d.get("tool_input")),
        )
        for d in _list(result.get("permission_denials"))[:_MAX_DENIALS]
        if isinstance(d, dict)
    )


def _error_message(result: dict[str, Any] | None, outcome: ProcessOutcome) -> str | None:
    """Why the iteration counts as an error, in words; None when it does not."""
    problems: list[str] = []
    if outcome.timed_out:
        problems.append("timed out: the agent was stopped at the iteration timeout")
    if outcome.interrupted:
        problems.append("interrupted: the agent was stopped on request")
    if result is None:
        problems.append(
            "no result line: the agent process ended without a result "
            f"(exit code {outcome.exit_code}){_stderr_excerpt(outcome.stderr_tail)}"
        )
    elif result.get("is_error") is True:
        problems.append(_reported_error(result))
    elif outcome.exit_code not in (0, None):
        problems.append(
            f"the agent exited with code {outcome.exit_code}{_stderr_excerpt(outcome.stderr_tail)}"
        )
    return "; ".join(problems) or None


def _api_error_status(result: dict[str, Any]) -> int | None:
    """The HTTP status of a failed run's API error: ``api_error_status``, or for CLIs that do
    not report it (2.1.100) the status their result text starts with (``API Error: 429 {…``)."""
    status = _int(result.get("api_error_status"))
    if status is not None or result.get("is_error") is not True:
        return status
    stated = _API_ERROR_TEXT.match(_str(result.get("result")) or "")
    return int(stated.group(1)) if stated else None


def _reported_error(result: dict[str, Any]) -> str:
    details: list[str] = []
    status = _api_error_status(result)
    if status is not None:
        details.append(f"API error status {status}")
    subtype = _str(result.get("subtype"))
    if subtype and subtype != "success":
        details.append(subtype)
    errors = [e for e in _list(result.get("errors")) if isinstance(e, str)]
    details += errors
    text = _str(result.get("result"))
    if text and not errors:
        details.append(_one_line(text, 300))
    return "the agent reported an error" + (f": {', '.join(details)}" if details else "")


def _stderr_excerpt(stderr_tail: str) -> str:
    excerpt = stderr_tail.strip()[-_STDERR_EXCERPT_CHARS:]
    return f"; stderr tail: {excerpt}" if excerpt else ""


# --- tolerant accessors: the stream is input, never trusted to be well-typed -----------------


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _count(value: object) -> int:
    """A token count: a positive integer, else 0."""
    number = _int(value)
    return number if number is not None and number > 0 else 0


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
