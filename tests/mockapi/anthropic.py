"""The Anthropic Messages API (``POST /v1/messages``) as the mock serves it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tests.mockapi import wire
from tests.mockapi.provider import Payload
from tests.mockapi.recorded import RecordedRequest
from tests.mockapi.turns import ApiError, Reply, ToolCall

MESSAGES_PATH = "/v1/messages"


class AnthropicMessages:
    name = "anthropic"

    def is_api_call(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?", 1)[0] == MESSAGES_PATH

    def is_main_request(self, body: Mapping[str, Any]) -> bool:
        """Agent-loop requests offer tools. The CLI's own helper queries do not (a prompt-type
        hook's evaluation sends ``tools: []``)."""
        return bool(body.get("tools"))

    def answer(self, request: RecordedRequest, answer: Reply | ToolCall, suffix: str) -> Payload:
        ids = {
            "message_id": f"msg_mock_{suffix}",
            "model": str(request.body.get("model", "claude-mock")),
            "tool_use_id": f"toolu_mock_{suffix}",
        }
        if request.body.get("stream"):
            return Payload(wire.encode_sse(wire.stream_events(answer, **ids)), "text/event-stream")
        return Payload(json.dumps(wire.message_json(answer, **ids)).encode())

    def error(self, error: ApiError) -> Payload:
        return Payload(json.dumps(wire.error_json(error)).encode(), status=error.status)

    def other(self, method: str, path: str) -> Payload:
        if method == "HEAD":
            return Payload(b"", "text/plain")
        return self.error(ApiError(404, "not_found_error", f"mock has no {method} {path}"))
