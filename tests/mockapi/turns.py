"""The script's vocabulary: what the mock answers to each main request, turn by turn."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.mockapi.recorded import RecordedRequest


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts reported for one answer; they decide the CLI's ``total_cost_usd``."""

    input_tokens: int = 1000
    output_tokens: int = 100
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


NO_USAGE = Usage(input_tokens=0, output_tokens=0)


@dataclass(frozen=True, slots=True)
class Reply:
    """A plain text answer that ends the agent's turn (``stop_reason: end_turn``)."""

    text: str
    usage: Usage = Usage()


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A ``tool_use`` block (optionally after some text); the CLI runs the tool and asks again."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    text_before: str | None = None
    usage: Usage = Usage()


@dataclass(frozen=True, slots=True)
class ApiError:
    """An HTTP error answer, e.g. 529 ``overloaded_error`` or 429 ``rate_limit_error``."""

    status: int = 529
    type: str = "overloaded_error"
    message: str = "Overloaded"


Answer = Reply | ToolCall | ApiError
Responder = Callable[["RecordedRequest"], Answer]
Turn = Answer | Responder

EXHAUSTED = Reply("(script exhausted)", usage=NO_USAGE)
