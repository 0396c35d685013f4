"""What the CLI will report as ``total_cost_usd`` for the usage the mock returns."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tests.mockapi.turns import ApiError, Reply, ToolCall, Turn, Usage

DEFAULT_MODEL = "claude-opus-5-5"  # what CLI 2.1.330 asks for without --model
PER_MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float

    def cost(self, usage: Usage) -> float:
        """One answer's cost, summed term by term like the CLI does."""
        return (
            usage.input_tokens / PER_MILLION * self.input
            + usage.output_tokens / PER_MILLION * self.output
            + usage.cache_read_input_tokens / PER_MILLION * self.cache_read
            + usage.cache_creation_input_tokens / PER_MILLION * self.cache_write
        )


OPUS_5_5 = Price(input=4, output=20, cache_write=5, cache_read=0.2)


def expected_cost(turns: Iterable[Turn | Usage], price: Price = OPUS_5_5) -> float:
    """The ``total_cost_usd`` of a run whose requests got these answers, added up in order
    like the CLI does (errors cost 0). Side requests cost nothing with the default side
    answer; a callable turn's cost is unknown, so pass its ``Usage`` instead."""
    total = 0.0
    for turn in turns:
        if isinstance(turn, Usage):
            total += price.cost(turn)
        elif isinstance(turn, Reply | ToolCall):
            total += price.cost(turn.usage)
        elif not isinstance(turn, ApiError):
            raise TypeError(f"cannot price a callable turn ({turn!r}): pass its Usage")
    return total
