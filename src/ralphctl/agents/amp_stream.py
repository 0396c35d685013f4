"""The parser of ``amp --execute --stream-json`` (Amp CLI 0.0.1790142911-g7618fb): Claude
Code's stream-json shapes, read by ``ClaudeStreamParser`` with what Amp does differently on top.

Facts it relies on (the event writer of the pinned CLI, docs/agents/amp.md):

- ``system/init`` (``session_id``: the thread id ``T-…``, ``tools``, ``mcp_servers``,
  ``agent_mode``), then ``assistant`` and ``user`` lines of the main thread only (a subagent's
  messages are not printed), then one ``result``. A killed CLI prints no ``result``; a CLI that
  fails before the thread starts prints nothing and says why on stderr (``Error: …``, exit 1).
- ``assistant``: one line per complete message, ``message.content`` of ``text``, ``tool_use``
  (and ``thinking`` with ``--stream-json-thinking``), ``message.usage`` with
  ``input_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens`` and
  ``output_tokens`` for that message alone. No message id and no model name.
- ``user``: the prompt echoed back (``text``: never the agent's text) and tool results
  (``tool_result`` with ``is_error``).
- ``result``: ``subtype: success`` with ``result`` (the last assistant message) and
  ``num_turns``, or ``subtype: error_during_execution``, ``is_error: true`` and ``error`` (a
  sentence: "Unauthorized …", "Out of Credits …", "Rate Limit Hit …", "Model Provider
  Overloaded …", or the raw message). No usage and no cost in USD on either.
- A tool that needs approval ends a stream-json run with the error "The following tools require
  user approval, which is not supported in stream JSON mode: Bash, …": a permission denial.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import orjson

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.claude_stream import ClaudeStreamParser
from ralphctl.agents.error_text import error_kind
from ralphctl.agents.events import AgentEvent, MessageUsage, ToolCall
from ralphctl.domain.model import IterationResult, PermissionDenial, TokenUsage, ToolUse

#: Amp's tools that change files in the work dir.
EDIT_TOOLS = frozenset({"edit_file", "create_file", "apply_patch", "delete_file"})
_USER_LINE = b'{"type":"user"'
_APPROVAL = re.compile(r"require(?:s)? user approval[^:]*:\s*(?P<tools>[\w, .:-]+)", re.I)
_NAMED_TOOL = re.compile(r"\bThe (?P<tool>\w+) tool (?:tried to run|is not allowed|requires)")
_STDERR_EXCERPT_CHARS = 500
_ERROR_CHARS = 500


class AmpStreamParser:
    """Turns ``amp --execute --stream-json`` lines into events and a result.

    Never raises on bad input. Claude Code's parser reads the lines (text, tool calls, tool
    outputs, the prompt echo ignored, the ``result``); this one adds what Amp does its own way:
    its file-editing tools, the tokens summed over the messages (Amp reports them per message
    only), and the error sentence read as a status and category (``error_text``).
    """

    def __init__(self) -> None:
        self._lines = ClaudeStreamParser()
        self._tokens = TokenUsage()
        self._messages = 0
        self._result: dict[str, Any] | None = None

    def feed(self, line: bytes) -> list[AgentEvent]:
        if line.startswith(_USER_LINE):
            return self._lines.feed(line)  # tool outputs (the big lines) and the prompt echo
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            return self._lines.feed(line)  # a stray line: counted and passed on as it is
        events = [_amp_tool_call(event) for event in self._lines.feed_object(obj)]
        kind = obj.get("type")
        if kind == "assistant" and obj.get("parent_tool_use_id") is None:
            events.append(self._message_usage(_dict(obj.get("message"))))
        elif kind == "result":
            self._result = obj
        return events

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        base = self._lines.finish(outcome)
        error = self._error_text(outcome)
        kind = error_kind(error) if error else None
        return dataclasses.replace(
            base,
            error_message=self._error_message(base, outcome),
            tokens=self._tokens,
            cost_usd=None,
            api_error_status=kind.status if kind else None,
            assistant_error=kind.category if kind else None,
            permission_denials=_denials(error) if error else (),
            tool_uses=tuple(
                ToolUse(use.name, use.summary, use.name in EDIT_TOOLS, use.tool_use_id)
                for use in base.tool_uses
            ),
            terminal_reason=self._failed_subtype(),
        )

    def _message_usage(self, message: dict[str, Any]) -> MessageUsage:
        """The usage of one complete message, added to the run's tokens."""
        usage = _dict(message.get("usage"))
        tokens = TokenUsage(
            input=_count(usage.get("input_tokens")),
            output=_count(usage.get("output_tokens")),
            cache_read=_count(usage.get("cache_read_input_tokens")),
            cache_write=_count(usage.get("cache_creation_input_tokens")),
        )
        self._tokens += tokens
        self._messages += 1
        shown = sum(_shown_chars(block) for block in _list(message.get("content")))
        return MessageUsage(f"amp-message-{self._messages}", "", tokens, shown)

    def _failed_subtype(self) -> str | None:
        """The ``result``'s subtype when it reports an error (``error_during_execution``)."""
        result = self._result
        return _str(result.get("subtype")) if result and result.get("is_error") is True else None

    def _error_text(self, outcome: ProcessOutcome) -> str | None:
        """The error Amp stated: the ``result``'s ``error``, else (no ``result``) its stderr."""
        if self._result is not None:
            error = self._result.get("error")
            return error if isinstance(error, str) and self._result.get("is_error") else None
        return outcome.stderr_tail.strip() or None

    def _error_message(self, base: IterationResult, outcome: ProcessOutcome) -> str | None:
        """Why the iteration counts as an error, in words; None when it does not."""
        if not base.is_error:
            return None
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
            stated = _str(result.get("error")) or _str(result.get("subtype")) or "no message"
            problems.append(f"the agent reported an error: {_one_line(stated, _ERROR_CHARS)}")
        elif outcome.exit_code not in (0, None):
            problems.append(
                f"the agent exited with code {outcome.exit_code}"
                f"{_stderr_excerpt(outcome.stderr_tail)}"
            )
        return "; ".join(problems) or None


def _amp_tool_call(event: AgentEvent) -> AgentEvent:
    """A tool call marked as editing files by Amp's tool names (Claude's parser knows
    Claude's)."""
    if isinstance(event, ToolCall):
        return ToolCall(event.name, event.tool_use_id, event.summary, event.name in EDIT_TOOLS)
    return event


def _denials(error: str) -> tuple[PermissionDenial, ...]:
    """The tools an error says needed an approval no one could give."""
    if found := _APPROVAL.search(error):
        names = (name.strip(" .") for name in found.group("tools").split(","))
        return tuple(PermissionDenial(name, detail=_one_line(error, 300)) for name in names if name)
    if found := _NAMED_TOOL.search(error):
        return (PermissionDenial(found.group("tool"), detail=_one_line(error, 300)),)
    return ()


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
