"""Live token and cost estimates of a running session, from its adapter's usage events.

In one long session the agent's exact totals (Claude's ``result`` line) only come at the end,
while the cost and token budgets must act at every Stop. The adapter's parser reports each
API message's usage as the stream shows it (``MessageUsage``: input and cache tokens exact,
output a placeholder while the message streams). So messages are counted once by id, and
their output is estimated from what the stream shows of them: ``max(placeholder,
ceil(characters / 4))`` over their text, thinking and tool input (about 4 characters per
token for English and code). Thinking the stream does not show, and helper requests that
never reach it, are missed: the agent's own report (``UsageReported``) settles the totals (see
``attribution``). A message of a model without a price adds tokens, no cost.

An agent whose stream shows no usage while it runs (Codex: only its closing
``turn.completed``) is metered from its own record of the run's responses instead
(``recorded``: ``AgentSpec.session_tokens``, e.g. Codex's rollout file), exact per response.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ralphctl.agents.base import ProcessOutcome, StreamParser
from ralphctl.agents.events import AgentEvent, MessageUsage, UsageReported
from ralphctl.domain.costs import Price, price_for
from ralphctl.domain.model import IterationResult, ModelTokens, TokenUsage

CHARS_PER_TOKEN = 4


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
    ``messages`` counts the distinct messages seen so far. ``recorded``, when given, reads
    the run's responses so far from the agent's own record: it meters a run whose stream
    has shown no usage.
    """

    def __init__(
        self,
        parser: StreamParser,
        prices: Mapping[str, Price],
        recorded: Callable[[], tuple[ModelTokens, ...]] | None = None,
    ) -> None:
        self._parser = parser
        self._prices = prices
        self._recorded = recorded
        self._taken: dict[str, TokenUsage] = {}  # of the recorded tokens, what take() took
        self._messages: dict[str, _Message] = {}
        self.messages = 0
        self.unpriced: set[str] = set()
        self.reported: Usage | None = None  # the process's own totals, from its result line

    def feed(self, line: bytes) -> list[AgentEvent]:
        events = self._parser.feed(line)
        for event in events:
            if isinstance(event, MessageUsage):
                self._meter(event)
            elif isinstance(event, UsageReported):
                self.reported = Usage(event.tokens, event.cost_usd)
        return events

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        return self._parser.finish(outcome)

    def current(self) -> Usage:
        """The running iteration's estimate so far."""
        return self._priced(self._estimates(self._recorded_totals()))

    def take(self) -> Usage:
        """The running iteration's estimate; the next one starts from zero."""
        recorded = self._recorded_totals()
        usage = self._priced(self._estimates(recorded))
        self._messages.clear()
        if recorded is not None:
            self._taken = recorded
        return usage

    def _recorded_totals(self) -> dict[str, TokenUsage] | None:
        """The run's tokens per model as the agent recorded them; None while the stream's
        own usage meters the run (or there is no record to read)."""
        if self._recorded is None or self.messages:
            return None
        totals: dict[str, TokenUsage] = {}
        for entry in self._recorded():
            totals[entry.model] = totals.get(entry.model, TokenUsage()) + entry.tokens
        return totals

    def _estimates(self, recorded: dict[str, TokenUsage] | None) -> list[tuple[str, TokenUsage]]:
        """The running iteration's tokens by model."""
        if recorded is None:
            return [(message.model, message.estimate()) for message in self._messages.values()]
        return [
            (model, _minus(tokens, self._taken.get(model, TokenUsage())))
            for model, tokens in recorded.items()
        ]

    def _priced(self, estimates: list[tuple[str, TokenUsage]]) -> Usage:
        tokens, cost = TokenUsage(), 0.0
        for model, estimate in estimates:
            tokens += estimate
            price = price_for(model, self._prices)
            if price is not None:
                cost += price.cost(estimate)
            elif estimate.total:
                self.unpriced.add(model)
        return Usage(tokens, cost)

    def _meter(self, usage: MessageUsage) -> None:
        known = self._messages.get(usage.message_id)
        if known is None:
            self.messages += 1
            known = _Message(usage.model, usage.tokens)
            self._messages[usage.message_id] = known
        known.chars += usage.shown_chars


def _minus(total: TokenUsage, part: TokenUsage) -> TokenUsage:
    """``total`` less ``part``, never below zero."""
    return TokenUsage(
        max(0, total.input - part.input),
        max(0, total.output - part.output),
        max(0, total.cache_read - part.cache_read),
        max(0, total.cache_write - part.cache_write),
    )
