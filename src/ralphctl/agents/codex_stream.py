"""The parser of ``codex exec --json`` output (CLI 0.169.0, docs/agents/codex.md).

One JSON object per line: ``thread.started{thread_id}``, ``turn.started``,
``item.started|updated|completed{item}``, then ``turn.completed{usage}`` or
``turn.failed{error}``; a fatal error also comes as a top-level ``error{message}``. Items
have a ``type``: ``agent_message{text}``, ``reasoning``, ``command_execution{command,
exit_code, status}``, ``file_change{changes, status}``, ``mcp_tool_call``, ``web_search``,
``todo_list``, ``error`` (a warning, e.g. unknown model metadata).

What the stream does not say, and how it is made up for:
- no USD cost: the tokens are priced by the engine, under the model the adapter passes in;
- ``turn.completed.usage`` is the thread's running total, not the turn's: the last one counts,
  less ``baseline`` (what a resumed thread had used before this run). Its ``input_tokens``
  count the cached tokens too (``cached_input_tokens``): the neutral ``input`` is the uncached
  part;
- API errors are sentences, not statuses: ``codex_errors`` reads the status, the category
  and a usage limit's reset time from them;
- a write refused by the sandbox prints no item: Codex logs it on stderr, which ``finish``
  reads from the stderr tail (``codex_errors.sandbox_denials``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.codex_errors import (
    PATCH_TOOL,
    SHELL_TOOL,
    USAGE_LIMIT,
    classify,
    sandbox_denials,
    stated_reset,
)
from ralphctl.agents.codex_session import usage_tokens
from ralphctl.agents.events import (
    AgentEvent,
    ApiRetry,
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
    IterationResult,
    ModelTokens,
    PermissionDenial,
    RateLimitInfo,
    TokenUsage,
    ToolUse,
)

NO_TOKENS = TokenUsage()
_MAX_TOOL_USES = 200
_MAX_DENIALS = 100
_SUMMARY_CHARS = 80
_STDERR_EXCERPT_CHARS = 500

_RECONNECTING = re.compile(r"\breconnecting\.*\s*(\d+)/(\d+)", re.IGNORECASE)
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
#: ``/bin/bash -lc '…'`` around a command without single quotes: how Codex shows most commands.
_SHELL_WRAPPED = re.compile(r"(?:\S*/)?(?:ba|z|da)?sh -l?c '([^']*)'\Z")
_TOOL_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search"})


class CodexStreamParser:
    """Turns ``codex exec --json`` lines into events and a result; never raises on bad input.

    Non-JSON lines are ``RawLine`` events, counted in ``unparsed_lines`` (blank ones are not).
    ``model`` is the run's model as the adapter knows it (the stream never names it). Memory
    stays bounded: the last agent message, the last error, and at most 200 tool calls and
    100 denials are kept.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        baseline: TokenUsage = NO_TOKENS,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._model = model
        self._baseline = baseline
        self._now = now or _local_now
        self._session_id: str | None = None
        self._text = ""
        self._tokens = TokenUsage()
        self._closed = False
        self._failed = False
        self._error: str | None = None
        self._turns = 0
        self._tool_uses: list[ToolUse] = []
        self._started: set[str] = set()
        self._denials: list[PermissionDenial] = []
        self._unparsed = 0

    def feed(self, line: bytes) -> list[AgentEvent]:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            if not line or line.isspace():
                return []
            obj = None
        if not isinstance(obj, dict):
            self._unparsed += 1
            return [RawLine.of(line)]
        kind = obj.get("type")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        return handler(self, obj) if handler else []

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        error = self._error if self._failed or not self._closed else None
        status, category = classify(error)
        denials = [*self._denials, *sandbox_denials(outcome.stderr_tail)][:_MAX_DENIALS]
        rate_limit = self._rate_limit(error) if category == USAGE_LIMIT else None
        tokens = self._tokens
        return IterationResult(
            final_text=self._text,
            is_error=(
                not self._closed
                or self._failed
                or outcome.exit_code not in (0, None)
                or outcome.timed_out
                or outcome.interrupted
            ),
            error_message=self._error_message(outcome),
            exit_code=outcome.exit_code,
            duration_ms=outcome.duration_ms,
            tokens=tokens,
            cost_usd=None,
            session_id=self._session_id,
            num_turns=self._turns or None,
            api_error_status=status,
            permission_denials=tuple(denials),
            rate_limit=rate_limit,
            stderr_tail=outcome.stderr_tail,
            timed_out=outcome.timed_out,
            interrupted=outcome.interrupted,
            unparsed_lines=self._unparsed,
            model=self._model,
            model_tokens=(
                (ModelTokens(self._model, tokens),)
                if self._model and tokens != TokenUsage()
                else ()
            ),
            tool_uses=tuple(self._tool_uses),
            assistant_error=category if category != USAGE_LIMIT else "rate_limit",
            terminal_reason="failed" if self._failed else "completed" if self._closed else None,
            truncated=not self._closed,
        )

    # --- one handler per line type ---------------------------------------------------------

    def _thread_started(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self._session_id = _str(obj.get("thread_id")) or self._session_id
        return [SessionStarted(self._session_id or "", self._model)]

    def _turn_started(self, _obj: dict[str, Any]) -> list[AgentEvent]:
        self._turns += 1
        return []

    def _turn_completed(self, obj: dict[str, Any]) -> list[AgentEvent]:
        # the thread's running total: the last one counts, less what came before this run
        self._tokens = _minus(usage_tokens(_dict(obj.get("usage"))), self._baseline)
        self._closed = True
        return [Finished(is_error=False, cost_usd=None)]

    def _turn_failed(self, obj: dict[str, Any]) -> list[AgentEvent]:
        message = _str(_dict(obj.get("error")).get("message"))
        self._error = message or self._error or "the turn failed"
        self._failed = True
        self._closed = True
        events: list[AgentEvent] = []
        if classify(self._error)[1] == USAGE_LIMIT and (info := self._rate_limit(self._error)):
            events.append(RateLimitSignal(info.status, info.resets_at, info.limit_type))
        return [*events, Finished(is_error=True, cost_usd=None)]

    def _top_level_error(self, obj: dict[str, Any]) -> list[AgentEvent]:
        message = _str(obj.get("message")) or ""
        retry = _RECONNECTING.search(message)
        if retry:
            status, _ = classify(message)
            return [ApiRetry(int(retry.group(1)), int(retry.group(2)), status, message)]
        self._error = message or self._error
        return []

    def _item_started(self, obj: dict[str, Any]) -> list[AgentEvent]:
        item = _dict(obj.get("item"))
        item_id = _str(item.get("id")) or ""
        call = _tool_call(item)
        if call is None or item_id in self._started:
            return []
        self._started.add(item_id)
        self._remember_tool(call)
        return [call]

    def _item_completed(self, obj: dict[str, Any]) -> list[AgentEvent]:
        item = _dict(obj.get("item"))
        kind = item.get("type")
        if kind == "agent_message":
            text = _str(item.get("text"))
            if text is None:
                return []
            self._text = text
            return [TextChunk(text)]
        if kind not in _TOOL_ITEMS:
            return []
        item_id = _str(item.get("id")) or ""
        status = item.get("status")
        events: list[AgentEvent] = []
        if item_id not in self._started or status == "declined":
            call = _tool_call(item)
            if call is not None and item_id not in self._started:
                self._started.add(item_id)
                self._remember_tool(call)
                events.append(call)
            if call is not None and status == "declined":
                if len(self._denials) < _MAX_DENIALS:
                    self._denials.append(PermissionDenial(call.name, item_id, call.summary))
                events.append(PermissionDenied(call.name, call.summary, item_id))
        exit_code = item.get("exit_code")
        failed = status in ("failed", "declined") or (isinstance(exit_code, int) and exit_code != 0)
        events.append(ToolOutput(item_id, failed))
        return events

    # --- helpers ---------------------------------------------------------------------------

    def _remember_tool(self, call: ToolCall) -> None:
        if len(self._tool_uses) < _MAX_TOOL_USES:
            self._tool_uses.append(
                ToolUse(call.name, call.summary, call.edits_files, call.tool_use_id)
            )

    def _rate_limit(self, message: str | None) -> RateLimitInfo | None:
        if message is None:
            return None
        return RateLimitInfo("rejected", stated_reset(message, self._now()), USAGE_LIMIT)

    def _error_message(self, outcome: ProcessOutcome) -> str | None:
        problems: list[str] = []
        if outcome.timed_out:
            problems.append("timed out: the agent was stopped at the iteration timeout")
        if outcome.interrupted:
            problems.append("interrupted: the agent was stopped on request")
        if self._failed:
            problems.append(f"the agent reported an error: {self._error}")
        elif not self._closed:
            reported = f": {self._error}" if self._error else ""
            problems.append(
                "no turn.completed line: the agent process ended without finishing its turn"
                f" (exit code {outcome.exit_code}){reported}{_stderr_excerpt(outcome)}"
            )
        elif outcome.exit_code not in (0, None):
            problems.append(
                f"the agent exited with code {outcome.exit_code}{_stderr_excerpt(outcome)}"
            )
        return "; ".join(problems) or None


_HANDLERS: dict[str, Callable[[CodexStreamParser, dict[str, Any]], list[AgentEvent]]] = {
    "thread.started": CodexStreamParser._thread_started,
    "turn.started": CodexStreamParser._turn_started,
    "turn.completed": CodexStreamParser._turn_completed,
    "turn.failed": CodexStreamParser._turn_failed,
    "item.started": CodexStreamParser._item_started,
    "item.completed": CodexStreamParser._item_completed,
    "error": CodexStreamParser._top_level_error,
}


def _minus(total: TokenUsage, earlier: TokenUsage) -> TokenUsage:
    return TokenUsage(
        input=max(0, total.input - earlier.input),
        output=max(0, total.output - earlier.output),
        cache_read=max(0, total.cache_read - earlier.cache_read),
        cache_write=max(0, total.cache_write - earlier.cache_write),
    )


def _tool_call(item: dict[str, Any]) -> ToolCall | None:
    """The tool call an item stands for; None for messages, reasoning, plans and warnings."""
    item_id = _str(item.get("id")) or ""
    kind = item.get("type")
    if kind == "command_execution":
        return ToolCall(SHELL_TOOL, item_id, _one_line(_inner_command(item.get("command"))))
    if kind == "file_change":
        paths = [
            _str(change.get("path")) or ""
            for change in _list(item.get("changes"))
            if isinstance(change, dict)
        ]
        return ToolCall(PATCH_TOOL, item_id, _one_line(", ".join(paths)), edits_files=True)
    if kind == "mcp_tool_call":
        server = _str(item.get("server")) or "unknown"
        tool = _str(item.get("tool")) or "unknown"
        return ToolCall(f"mcp__{server}__{tool}", item_id, _one_line(str(item.get("arguments"))))
    if kind == "web_search":
        return ToolCall("web_search", item_id, _one_line(_str(item.get("query")) or ""))
    return None


def _inner_command(command: object) -> str:
    """The command a shell ran: ``/bin/bash -lc 'pytest -q'`` is ``pytest -q``."""
    if isinstance(command, list):
        parts = [part for part in command if isinstance(part, str)]
    elif isinstance(command, str):
        if (simple := _SHELL_WRAPPED.match(command)) is not None:
            return simple.group(1)  # the common case, without a tokenizer
        try:
            parts = shlex.split(command)
        except ValueError:
            return command
    else:
        return ""
    if len(parts) == 3 and parts[0].rsplit("/", 1)[-1] in _SHELLS and parts[1] in ("-lc", "-c"):
        return parts[2]
    return " ".join(parts)


def _local_now() -> datetime:
    return datetime.now().astimezone()


def _stderr_excerpt(outcome: ProcessOutcome) -> str:
    excerpt = outcome.stderr_tail.strip()[-_STDERR_EXCERPT_CHARS:]
    return f"; stderr tail: {excerpt}" if excerpt else ""


def _one_line(text: str, limit: int = _SUMMARY_CHARS) -> str:
    flat = " ".join(text[: limit * 4].split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
