"""The parser of ``cursor-agent -p --output-format stream-json``: one JSON object per line, into
neutral events and an ``IterationResult``.

Facts it relies on, from Cursor's documentation of the format and streams others captured
(docs/agents/cursor.md; not verified here: the CLI is not on a package registry):

- Lines: ``system/init`` (``session_id``, ``model``: a display name, ``permissionMode``,
  ``apiKeySource``), ``user`` (the prompt echoed back: never the agent's text), ``thinking``
  (``delta``/``completed``), ``assistant`` (``message.content[].text``), ``tool_call`` with
  ``subtype`` ``started`` or ``completed`` and ``call_id``, and a closing ``result``
  (``subtype``, ``is_error``, ``result``, ``session_id``, ``duration_ms``, ``request_id``).
  Unknown lines (``interaction_query``…) are ignored.
- Without ``--stream-partial-output`` each ``assistant`` line is one whole message between
  tool calls; with it, the pieces of a message come as ``assistant`` lines, then the whole
  message once more. The final text is therefore the text after the last tool call, a repeat
  of that text not counted twice. ``result.result`` joins every message of the run without a
  separator, so it is the final text only when no ``assistant`` line came.
- A tool call is one key of ``tool_call``: ``<name>ToolCall`` (``readToolCall``,
  ``writeToolCall``, ``editToolCall``, ``shellToolCall``…) with ``args`` and, once completed,
  ``result`` (``success``, ``error`` or ``rejected``: refused by the permission rules), or
  ``function`` with ``name`` and ``arguments``.
- Usage: the versions documented print none; a ``usage`` object on ``result`` is read when
  present. No cost in USD.
- On failure the CLI exits non-zero, the stream may end without ``result``, and the error is a
  sentence on stderr (read by ``error_text``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.claude_stream import summarise_tool_input
from ralphctl.agents.error_text import error_kind
from ralphctl.agents.events import (
    AgentEvent,
    Finished,
    PermissionDenied,
    RawLine,
    SessionStarted,
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

#: Cursor's tools that change files in the work dir (the ``<name>ToolCall`` names).
EDIT_TOOLS = frozenset({"write", "edit", "delete", "applyPatch", "multiEdit", "editNotebook"})
_TOOL_SUFFIX = "ToolCall"
_TEXT_LIMIT = 256 * 1024  # the final text keeps at most this many characters (its end)
_MAX_DENIALS = 100
_MAX_TOOL_USES = 200
_STDERR_EXCERPT_CHARS = 500
#: ``result.usage`` keys, as Cursor (camelCase) or Claude-like (snake_case) names them.
_USAGE_KEYS = {
    "input": ("inputTokens", "input_tokens"),
    "output": ("outputTokens", "output_tokens"),
    "cache_read": ("cacheReadTokens", "cache_read_tokens", "cache_read_input_tokens"),
    "cache_write": ("cacheWriteTokens", "cache_write_tokens", "cache_creation_input_tokens"),
}


class CursorStreamParser:
    """Turns ``cursor-agent -p --output-format stream-json`` lines into events and a result.

    Never raises on bad input: lines that are not a JSON object are counted in
    ``unparsed_lines`` and passed on as ``RawLine`` events (blank ones are not). Memory stays
    bounded: the final text keeps its last 256 KiB, at most 100 denials and 200 tool calls.
    """

    def __init__(self) -> None:
        self._session_id: str | None = None
        self._model: str | None = None
        self._text = ""  # the assistant text since the last tool call
        self._result: dict[str, Any] | None = None
        self._last_error: str | None = None
        self._tool_uses: list[ToolUse] = []
        self._tool_names: dict[str, str] = {}
        self._denials: list[PermissionDenial] = []
        self._unparsed = 0
        self._handlers: dict[str, Callable[[dict[str, Any]], list[AgentEvent]]] = {
            "system": self._system,
            "assistant": self._assistant,
            "tool_call": self._tool_call,
            "result": self._result_line,
            "error": self._error,
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
        failed = self._result is None or result.get("is_error") is True
        exited_badly = outcome.exit_code not in (0, None)
        error = self._error_text(outcome) if failed or exited_badly else None
        kind = error_kind(error) if error else None
        tokens = _usage(_dict(result.get("usage")))
        reported = _str(result.get("result"))
        return IterationResult(
            final_text=self._text or (reported or "")[-_TEXT_LIMIT:],
            is_error=(failed or exited_badly or outcome.timed_out or outcome.interrupted),
            error_message=self._error_message(outcome),
            exit_code=outcome.exit_code,
            duration_ms=outcome.duration_ms,
            tokens=tokens,
            cost_usd=None,
            session_id=_str(result.get("session_id")) or self._session_id,
            api_error_status=kind.status if kind else None,
            permission_denials=tuple(self._denials),
            stderr_tail=outcome.stderr_tail,
            timed_out=outcome.timed_out,
            interrupted=outcome.interrupted,
            unparsed_lines=self._unparsed,
            model=self._model,
            model_tokens=(
                (ModelTokens(self._model, tokens),) if self._model and tokens.total else ()
            ),
            tool_uses=tuple(self._tool_uses),
            assistant_error=kind.category if kind else None,
            terminal_reason=_str(result.get("subtype")) if failed and self._result else None,
            truncated=self._result is None,
        )

    # --- one handler per line type ---------------------------------------------------------

    def _system(self, obj: dict[str, Any]) -> list[AgentEvent]:
        if obj.get("subtype") != "init":
            return []
        self._session_id = _str(obj.get("session_id"))
        self._model = _str(obj.get("model"))
        return [SessionStarted(self._session_id or "", self._model)]

    def _assistant(self, obj: dict[str, Any]) -> list[AgentEvent]:
        content = _dict(obj.get("message")).get("content")
        text = "".join(
            block["text"]
            for block in _list(content)
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        )
        if not text or text == self._text:
            return []  # nothing, or the whole message repeated after its pieces
        self._text = (self._text + text)[-_TEXT_LIMIT:]
        return [TextChunk(text, delta=True)]

    def _tool_call(self, obj: dict[str, Any]) -> list[AgentEvent]:
        call_id = _str(obj.get("call_id")) or ""
        name, body = _tool(_dict(obj.get("tool_call")))
        subtype = obj.get("subtype")
        if subtype == "started":
            self._text = ""  # the final text is the answer after the last tool call
            summary = _summary(body)
            edits = name in EDIT_TOOLS
            if len(self._tool_uses) < _MAX_TOOL_USES:
                self._tool_uses.append(ToolUse(name, summary, edits, call_id))
                self._tool_names[call_id] = name
            return [ToolCall(name, call_id, summary, edits)]
        if subtype != "completed":
            return []
        outcome = _dict(body.get("result"))
        events: list[AgentEvent] = [ToolOutput(call_id, bool(outcome) and "success" not in outcome)]
        if "rejected" in outcome:
            tool = self._tool_names.get(call_id, name)
            reason = _reason(outcome["rejected"])
            if len(self._denials) < _MAX_DENIALS:
                self._denials.append(PermissionDenial(tool, call_id, reason))
            events.append(PermissionDenied(tool, reason, call_id))
        return events

    def _result_line(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self._result = obj
        return [Finished(is_error=obj.get("is_error") is True, cost_usd=None)]

    def _error(self, obj: dict[str, Any]) -> list[AgentEvent]:
        message = _str(obj.get("message")) or _reason(obj.get("error"))
        if message:
            self._last_error = message
        return []

    def _error_text(self, outcome: ProcessOutcome) -> str | None:
        """The error Cursor stated: an ``error`` line, a failed ``result``'s text, stderr."""
        failed_text = _str(_dict(self._result).get("result")) if self._result else None
        return self._last_error or failed_text or outcome.stderr_tail.strip() or None

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
        elif result.get("is_error") is True:
            stated = self._last_error or _str(result.get("result")) or "no message"
            problems.append(f"the agent reported an error: {_one_line(stated, 500)}")
        elif outcome.exit_code not in (0, None):
            problems.append(
                f"the agent exited with code {outcome.exit_code}"
                f"{_stderr_excerpt(outcome.stderr_tail)}"
            )
        return "; ".join(problems) or None


def _tool(tool_call: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The tool's name and its body (``args``, ``result``) from a ``tool_call`` object."""
    for key, body in tool_call.items():
        if key.endswith(_TOOL_SUFFIX) and len(key) > len(_TOOL_SUFFIX) and isinstance(body, dict):
            return key[: -len(_TOOL_SUFFIX)], body
    function = _dict(tool_call.get("function"))
    if function:
        return _str(function.get("name")) or "function", function
    return "unknown", {}


def _summary(body: dict[str, Any]) -> str:
    """A one-line description of a call: its ``args`` (path, command…), or a function's
    ``arguments`` (a JSON string)."""
    args = body.get("args")
    if args is None and isinstance(body.get("arguments"), str):
        try:
            args = orjson.loads(body["arguments"])
        except orjson.JSONDecodeError:
            return _one_line(body["arguments"], 80)
    return summarise_tool_input(args)


def _reason(value: object) -> str:
    """The words of a rejection or error object (``reason``, ``message``), else ''."""
    if isinstance(value, str):
        return _one_line(value, 300)
    found = _dict(value)
    text = _str(found.get("reason")) or _str(found.get("message")) or _str(found.get("error"))
    return _one_line(text, 300) if text else ""


def _usage(usage: dict[str, Any]) -> TokenUsage:
    """The tokens a ``result.usage`` object states, whichever naming it uses."""
    counts = {
        field: next((_count(usage[key]) for key in keys if key in usage), 0)
        for field, keys in _USAGE_KEYS.items()
    }
    return TokenUsage(**counts)


def _stderr_excerpt(stderr_tail: str) -> str:
    excerpt = stderr_tail.strip()[-_STDERR_EXCERPT_CHARS:]
    return f"; stderr tail: {excerpt}" if excerpt else ""


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text[: limit * 4].split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: object) -> int:
    """A token count: a positive integer, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
