"""The OpenAI Responses API (``POST /v1/responses``) as the mock serves it, for Codex.

Answers stream as server-sent events, in the order the real API sends them:
``response.created``, then per output item ``response.output_item.added``, its text deltas
(``response.output_text.delta``) and ``response.output_item.done``, then
``response.completed`` with the usage. A ``ToolCall`` becomes a ``function_call`` item, or a
``custom_tool_call`` (freeform input, e.g. Codex's ``apply_patch``) when the request declares
the tool as ``custom``; its freeform text is ``input["input"]``.

Usage: ``Usage.input_tokens`` are the uncached input tokens and ``cache_read_input_tokens``
the cached ones; on the wire ``input_tokens`` is their sum (the API counts cached tokens in
it) and ``input_tokens_details.cached_tokens`` the cached part.

Errors are OpenAI error bodies (``{"error": {"message", "type", "param", "code"}}``) with the
HTTP status. A 429 also carries the rate-limit headers Codex reads (``retry-after`` and the
``x-codex-primary-*`` window whose reset is ``reset_in_s`` from now); a 429 of type
``usage_limit_reached`` states its reset in the body too (``resets_at``,
``resets_in_seconds``), as the ChatGPT backend does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from tests.mockapi.provider import Payload
from tests.mockapi.recorded import RecordedRequest
from tests.mockapi.server import MockApi
from tests.mockapi.turns import ApiError, Reply, ToolCall, Usage

RESPONSES_PATH = "/v1/responses"
DEFAULT_MODEL = "gpt-mock-codex"
TEXT_CHUNK = 16  # output text arrives in response.output_text.delta pieces of this size
USAGE_LIMIT_REACHED = "usage_limit_reached"


class OpenAIResponses:
    """The Responses API. ``reset_in_s``: when a 429's limit window resets, from now."""

    name = "openai-responses"

    def __init__(self, reset_in_s: int = 3600) -> None:
        self.reset_in_s = reset_in_s

    def is_api_call(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?", 1)[0].endswith(RESPONSES_PATH)

    def is_main_request(self, body: Mapping[str, Any]) -> bool:
        """The agent's own turns offer tools (in ``tools``, or for Codex's code-mode models
        in an ``additional_tools`` input item); helper calls (titles, summaries) do not."""
        return bool(body.get("tools")) or any(
            item.get("type") == "additional_tools" for item in input_items(body)
        )

    def answer(self, request: RecordedRequest, answer: Reply | ToolCall, suffix: str) -> Payload:
        model = str(request.body.get("model") or DEFAULT_MODEL)
        items = output_items(answer, suffix, custom_tools(request.body))
        events = stream_events(f"resp_mock_{suffix}", model, items, answer.usage)
        return Payload(encode_sse(events), "text/event-stream")

    def error(self, error: ApiError) -> Payload:
        body: dict[str, Any] = {
            "message": error.message,
            "type": error.type,
            "param": None,
            "code": error.type,
        }
        headers: dict[str, str] = {}
        if error.status == 429:
            resets_at = int(time.time()) + self.reset_in_s
            headers = {
                "retry-after": str(self.reset_in_s),
                "x-codex-primary-used-percent": "100",
                "x-codex-primary-window-minutes": "300",
                "x-codex-primary-reset-at": str(resets_at),
            }
            if error.type == USAGE_LIMIT_REACHED:
                body |= {"resets_at": resets_at, "resets_in_seconds": self.reset_in_s}
        return Payload(json.dumps({"error": body}).encode(), status=error.status, headers=headers)

    def other(self, method: str, path: str) -> Payload:
        if method == "GET" and path.split("?", 1)[0].endswith("/models"):
            return Payload(json.dumps({"object": "list", "data": [], "models": []}).encode())
        if method == "HEAD":
            return Payload(b"", "text/plain")
        return self.error(ApiError(404, "not_found_error", f"mock has no {method} {path}"))


class MockResponsesApi(MockApi):
    """The OpenAI Responses API; point Codex at ``base_url + "/v1"`` as a model provider."""

    def __init__(self, reset_in_s: int = 3600) -> None:
        super().__init__(OpenAIResponses(reset_in_s))


def input_items(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's ``input`` items (a plain-string input is one user message)."""
    items = body.get("input")
    if isinstance(items, str):
        return [{"type": "message", "role": "user", "content": items}]
    return [item for item in items or [] if isinstance(item, dict)]


def input_texts(request: RecordedRequest, role: str = "user") -> list[str]:
    """The texts of the request's ``role`` messages, in order (Codex sends its instructions
    as ``developer`` messages and its environment context as ``user`` ones)."""
    texts: list[str] = []
    for item in input_items(request.body):
        if item.get("type", "message") != "message" or item.get("role") != role:
            continue
        content = item.get("content")
        if isinstance(content, str):
            texts.append(content)
            continue
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    return texts


def tool_outputs(request: RecordedRequest) -> list[dict[str, Any]]:
    """The tool results the CLI sent back (``function_call_output`` and
    ``custom_tool_call_output`` items), in order."""
    kinds = ("function_call_output", "custom_tool_call_output")
    return [item for item in input_items(request.body) if item.get("type") in kinds]


def custom_tools(body: Mapping[str, Any]) -> frozenset[str]:
    """The names of the request's freeform (``type: custom``) tools, in ``tools`` or nested in
    namespaces and ``additional_tools`` input items."""
    found: set[str] = set()
    pending: list[Any] = [body.get("tools") or []]
    pending += [item.get("tools") or [] for item in input_items(body)]
    while pending:
        for tool in pending.pop():
            if not isinstance(tool, dict):
                continue
            if tool.get("type") == "custom":
                found.add(str(tool.get("name")))
            pending.append(tool.get("tools") or [])
    return frozenset(found)


def output_items(
    answer: Reply | ToolCall, suffix: str, custom: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """The answer's output items: a message, and for a tool call the call after it."""
    text = answer.text if isinstance(answer, Reply) else answer.text_before
    items: list[dict[str, Any]] = []
    if text:
        items.append(
            {
                "type": "message",
                "id": f"msg_mock_{suffix}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    if isinstance(answer, ToolCall):
        call_id = f"call_mock_{suffix}"
        if answer.name in custom:
            items.append(
                {
                    "type": "custom_tool_call",
                    "id": f"ctc_mock_{suffix}",
                    "status": "completed",
                    "call_id": call_id,
                    "name": answer.name,
                    "input": str(answer.input.get("input", "")),
                }
            )
        else:
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_mock_{suffix}",
                    "status": "completed",
                    "call_id": call_id,
                    "name": answer.name,
                    "arguments": json.dumps(dict(answer.input)),
                }
            )
    return items


def usage_json(usage: Usage) -> dict[str, Any]:
    cached = usage.cache_read_input_tokens
    total_input = usage.input_tokens + cached
    return {
        "input_tokens": total_input,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": total_input + usage.output_tokens,
    }


def stream_events(
    response_id: str, model: str, items: list[dict[str, Any]], usage: Usage
) -> list[dict[str, Any]]:
    """One response as its SSE events, each with its ``sequence_number``."""
    response = {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": model,
        "output": [],
    }
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    for index, item in enumerate(items):
        events.extend(_item_events(index, item))
    done = {**response, "status": "completed", "output": items, "usage": usage_json(usage)}
    events.append({"type": "response.completed", "response": done})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    if item["type"] != "message":
        opening = {**item, "status": "in_progress"}
        return [
            {"type": "response.output_item.added", "output_index": index, "item": opening},
            {"type": "response.output_item.done", "output_index": index, "item": item},
        ]
    text = item["content"][0]["text"]
    opening = {**item, "status": "in_progress", "content": []}
    ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
    return [
        {"type": "response.output_item.added", "output_index": index, "item": opening},
        *(
            {"type": "response.output_text.delta", **ids, "delta": text[i : i + TEXT_CHUNK]}
            for i in range(0, len(text), TEXT_CHUNK)
        ),
        {"type": "response.output_text.done", **ids, "text": text},
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]


def encode_sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
    )
