"""Live token and cost estimates of a running session, from its stream's ``assistant`` lines.

In one long ``claude -p`` session the ``result`` line (exact totals) only comes at the end,
while the cost and token budgets must act at every Stop. Each API message appears as one
``assistant`` line per content block, all sharing ``message.id`` and repeating the usage of
``message_start``: input and cache tokens are exact, ``output_tokens`` is a placeholder (1).
So messages are counted once by id, and their output is estimated from what the stream shows
of them: ``max(placeholder, ceil(characters / 4))`` over their text, thinking and tool-input
JSON (about 4 characters per token for English and code). Thinking the stream does not
show, and helper requests that never reach it, are missed: the session's ``result`` settles
the totals (see ``attribution``). A message of a model without a price adds tokens, no cost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ralphctl.agents.base import ProcessOutcome, StreamParser
from ralphctl.agents.events import AgentEvent
from ralphctl.domain.costs import Price, price_for
from ralphctl.domain.model import IterationResult, TokenUsage

CHARS_PER_TOKEN = 4
_SINCE_LAST_RESULT = b'"model_usage_since_last_result"'


@dataclass(frozen=True, slots=True)
class Usage:
    """Estimated tokens and cost (USD) of part of a session."""

    tokens: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float = 0.0


@dataclass(slots=True)
class _Message:
    model: str
    tokens: TokenUsage  # input and cache tokens; output is the placeholder
    chars: int = 0

    def estimate(self) -> TokenUsage:
        output = max(self.tokens.output, math.ceil(self.chars / CHARS_PER_TOKEN))
        t = self.tokens
        return TokenUsage(t.input, output, t.cache_read, t.cache_write)


class MeteredParser:
    """A stream parser that also meters the messages of the running iteration.

    ``take()`` ends the iteration: it returns its estimate and starts a new one.
    ``messages`` counts the distinct messages seen so far.
    """

    def __init__(self, parser: StreamParser, prices: Mapping[str, Price]) -> None:
        self._parser = parser
        self._prices = prices
        self._messages: dict[str, _Message] = {}
        self.messages = 0
        self.unpriced: set[str] = set()
        self.reported: Usage | None = None  # the process's own totals, from its result line

    def feed(self, line: bytes) -> list[AgentEvent]:
        events = self._parser.feed(line)
        if b'"assistant"' in line:  # cheap pre-checks: only these lines carry usage
            self._meter(line)
        if _SINCE_LAST_RESULT in line:
            self.reported = _reported(line) or self.reported
        return events

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        return self._parser.finish(outcome)

    def current(self) -> Usage:
        """The running iteration's estimate so far."""
        tokens, cost = TokenUsage(), 0.0
        for message in self._messages.values():
            estimate = message.estimate()
            tokens += estimate
            price = price_for(message.model, self._prices)
            if price is not None:
                cost += price.cost(estimate)
            elif estimate.total:
                self.unpriced.add(message.model)
        return Usage(tokens, cost)

    def take(self) -> Usage:
        """The running iteration's estimate; the next one starts from zero."""
        usage = self.current()
        self._messages.clear()
        return usage

    def _meter(self, line: bytes) -> None:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        if not isinstance(obj, dict) or obj.get("type") != "assistant":
            return
        message = _dict(obj.get("message"))
        key = message.get("id")
        if not isinstance(key, str):
            return
        known = self._messages.get(key)
        if known is None:
            self.messages += 1
            model = message.get("model")
            known = _Message(model if isinstance(model, str) else "", _tokens(message))
            self._messages[key] = known
        known.chars += sum(_chars(block) for block in _list(message.get("content")))


def _reported(line: bytes) -> Usage | None:
    """A result line's ``model_usage_since_last_result``: tokens and ``costUSD`` per model."""
    try:
        data = _dict(orjson.loads(line))
    except orjson.JSONDecodeError:
        return None
    per_model = data.get("model_usage_since_last_result") if data.get("type") == "result" else None
    if not isinstance(per_model, dict):
        return None
    tokens, cost = TokenUsage(), 0.0
    for usage in per_model.values():
        usd = _dict(usage).get("costUSD")
        if isinstance(usd, bool) or not isinstance(usd, int | float):
            return None
        cost += usd
        tokens += TokenUsage(
            input=_int(usage.get("inputTokens")),
            output=_int(usage.get("outputTokens")),
            cache_read=_int(usage.get("cacheReadInputTokens")),
            cache_write=_int(usage.get("cacheCreationInputTokens")),
        )
    return Usage(tokens, cost)


def _tokens(message: dict[str, Any]) -> TokenUsage:
    usage = _dict(message.get("usage"))
    return TokenUsage(
        input=_int(usage.get("input_tokens")),
        output=_int(usage.get("output_tokens")),
        cache_read=_int(usage.get("cache_read_input_tokens")),
        cache_write=_int(usage.get("cache_creation_input_tokens")),
    )


def _chars(block: object) -> int:
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


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
