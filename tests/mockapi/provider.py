"""What makes a mock one provider's API: its routes, which requests play the script, and how
an answer looks on its wire. ``server.MockApi`` serves any ``Provider``; each provider's wire
format lives in its own module (``anthropic`` is the Messages API)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tests.mockapi.recorded import RecordedRequest
from tests.mockapi.turns import ApiError, Reply, ToolCall


@dataclass(frozen=True, slots=True)
class Payload:
    """An HTTP answer's body and its content type (``status`` 200 unless said)."""

    body: bytes
    content_type: str = "application/json"
    status: int = 200
    headers: Mapping[str, str] | None = None


class Provider(Protocol):
    """One provider's API as the mock serves it."""

    name: str

    def is_api_call(self, method: str, path: str) -> bool:
        """The request is a model call (the script answers it); else ``other`` does."""
        ...

    def is_main_request(self, body: Mapping[str, Any]) -> bool:
        """A model call from the agent's own loop (it consumes a script turn); helper calls
        (titles, routing, summaries) get the side answer instead."""
        ...

    def answer(self, request: RecordedRequest, answer: Reply | ToolCall, suffix: str) -> Payload:
        """The wire form of ``answer``; ``suffix`` makes ids unique (``001``, ``side_002``)."""
        ...

    def error(self, error: ApiError) -> Payload:
        """The wire form of an HTTP error answer."""
        ...

    def other(self, method: str, path: str) -> Payload:
        """Any request that is not a model call (model lists, health checks…)."""
        ...
