"""Scripted mocks of model providers' APIs, good enough for the real agent CLIs: the Anthropic
Messages API (``MockMessagesApi``) and any other ``Provider`` (``MockApi``)."""

from tests.mockapi.pricing import DEFAULT_MODEL, Price, expected_cost
from tests.mockapi.provider import Payload, Provider
from tests.mockapi.recorded import RecordedRequest
from tests.mockapi.server import MockApi, MockMessagesApi
from tests.mockapi.turns import EXHAUSTED, NO_USAGE, Answer, ApiError, Reply, ToolCall, Turn, Usage

__all__ = [
    "DEFAULT_MODEL",
    "EXHAUSTED",
    "NO_USAGE",
    "Answer",
    "ApiError",
    "MockApi",
    "MockMessagesApi",
    "Payload",
    "Price",
    "Provider",
    "RecordedRequest",
    "Reply",
    "ToolCall",
    "Turn",
    "Usage",
    "expected_cost",
]
