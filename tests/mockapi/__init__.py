"""A scripted mock of the Anthropic Messages API, good enough for the real Claude Code CLI."""

from tests.mockapi.pricing import DEFAULT_MODEL, Price, expected_cost
from tests.mockapi.recorded import RecordedRequest
from tests.mockapi.server import MockMessagesApi
from tests.mockapi.turns import EXHAUSTED, NO_USAGE, Answer, ApiError, Reply, ToolCall, Turn, Usage

__all__ = [
    "DEFAULT_MODEL",
    "EXHAUSTED",
    "NO_USAGE",
    "Answer",
    "ApiError",
    "MockMessagesApi",
    "Price",
    "RecordedRequest",
    "Reply",
    "ToolCall",
    "Turn",
    "Usage",
    "expected_cost",
]
