"""The OpenAI Chat Completions API (``POST /v1/chat/completions``) as the mock serves it.

Usage::

    from tests.mockapi import ApiError, MockApi, Reply, ToolCall, Usage
    from tests.mockapi.openai_chat import OpenAIChat, tool_messages

    with MockApi(OpenAIChat()) as api:                 # base URL for the CLI: api.base_url + "/v1"
        api.set_script(
            ToolCall("write", {"filePath": "a.txt", "content": "hi"}, usage=Usage(50, 5)),
            Reply("Done.", Usage(input_tokens=60, output_tokens=4, cache_read_input_tokens=10)),
            ApiError(429, "rate_limit_exceeded", "Rate limit reached"),  # + retry-after headers
        )
        ...  # run the CLI
        tool_messages(api.main_requests[1])           # the ``role: tool`` messages it sent back

What it speaks:
- streaming (``stream: true``): SSE ``chat.completion.chunk`` objects: a role chunk, the text in
  ``delta.content``, each tool call in ``delta.tool_calls`` (id, ``function.name`` and then
  ``function.arguments`` in pieces), a chunk with ``finish_reason`` (``stop``/``tool_calls``),
  a usage chunk (``choices: []``) when ``stream_options.include_usage`` is set, ``[DONE]``;
- non-streaming: one ``chat.completion`` JSON with ``usage``;
- ``GET /v1/models``: the ``models`` given (any path ending in ``/models``);
- errors: ``{"error": {message, type, param, code}}`` with the HTTP status; a 429 or 5xx also
  carries ``retry-after`` and ``retry-after-ms`` (``retry_after_s``, default 0: clients that
  honour them retry at once, so tests of retried errors stay fast).

Tokens: ``Usage.input_tokens`` is the uncached input; on the wire ``prompt_tokens`` is input plus
``cache_read_input_tokens`` (OpenAI counts cached tokens inside the prompt) and
``prompt_tokens_details.cached_tokens`` the cache reads. Cache writes have no OpenAI field.
Main requests are those offering ``tools``; others (titles, summaries) are side requests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tests.mockapi.provider import Payload
from tests.mockapi.recorded import RecordedRequest
from tests.mockapi.turns import ApiError, Reply, ToolCall, Usage

CHAT_PATH = "/chat/completions"
MODELS_PATH = "/models"
DEFAULT_MODELS = ("gpt-mock",)
ARGUMENT_CHUNK = 24  # tool arguments arrive in pieces of this many characters
CREATED = 1_700_000_000  # a fixed timestamp: recorded streams stay byte-stable


class OpenAIChat:
    """The Chat Completions wire format; serve it with ``MockApi(OpenAIChat())``."""

    name = "openai"

    def __init__(
        self, *, models: Sequence[str] = DEFAULT_MODELS, retry_after_s: float = 0.0
    ) -> None:
        self.models = tuple(models)
        self.retry_after_s = retry_after_s

    def is_api_call(self, method: str, path: str) -> bool:
        return method == "POST" and _route(path).endswith(CHAT_PATH)

    def is_main_request(self, body: Mapping[str, Any]) -> bool:
        """The agent's own loop offers tools; title and summary helpers do not."""
        return bool(body.get("tools"))

    def answer(self, request: RecordedRequest, answer: Reply | ToolCall, suffix: str) -> Payload:
        ids = {
            "completion_id": f"chatcmpl-mock-{suffix}",
            "model": str(request.body.get("model") or self.models[0]),
            "call_id": f"call_mock_{suffix}",
        }
        if not request.body.get("stream"):
            return Payload(json.dumps(completion_json(answer, **ids)).encode())
        options = request.body.get("stream_options")
        with_usage = isinstance(options, Mapping) and bool(options.get("include_usage"))
        chunks = stream_chunks(answer, include_usage=with_usage, **ids)
        return Payload(encode_sse(chunks), "text/event-stream")

    def error(self, error: ApiError) -> Payload:
        headers: dict[str, str] = {}
        if error.status == 429 or error.status >= 500:
            headers = {
                "retry-after": _seconds(self.retry_after_s),
                "retry-after-ms": str(round(self.retry_after_s * 1000)),
            }
        return Payload(json.dumps(error_json(error)).encode(), status=error.status, headers=headers)

    def other(self, method: str, path: str) -> Payload:
        if method == "HEAD":
            return Payload(b"", "text/plain")
        if method == "GET" and _route(path).endswith(MODELS_PATH):
            return Payload(json.dumps(models_json(self.models)).encode())
        return self.error(ApiError(404, "invalid_request_error", f"mock has no {method} {path}"))


def usage_json(usage: Usage) -> dict[str, Any]:
    prompt = usage.input_tokens + usage.cache_read_input_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_input_tokens},
    }


def finish_reason(answer: Reply | ToolCall) -> str:
    return "tool_calls" if isinstance(answer, ToolCall) else "stop"


def completion_json(
    answer: Reply | ToolCall, *, completion_id: str, model: str, call_id: str
) -> dict[str, Any]:
    """The whole answer, as a non-streaming ``chat.completion``."""
    message: dict[str, Any] = {"role": "assistant", "content": _text(answer)}
    if isinstance(answer, ToolCall):
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": answer.name, "arguments": json.dumps(dict(answer.input))},
            }
        ]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(answer)}],
        "usage": usage_json(answer.usage),
    }


def stream_chunks(
    answer: Reply | ToolCall,
    *,
    completion_id: str,
    model: str,
    call_id: str,
    include_usage: bool,
) -> list[dict[str, Any]]:
    """The same answer as ``chat.completion.chunk`` objects, in the order the API sends them."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    text = _text(answer)
    if text:
        chunks.append(chunk({"content": text}))
    if isinstance(answer, ToolCall):
        chunks.extend(chunk({"tool_calls": [call]}) for call in _tool_call_deltas(answer, call_id))
    chunks.append(chunk({}, finish_reason(answer)))
    if include_usage:
        last = chunk({})
        last.update(choices=[], usage=usage_json(answer.usage))
        chunks.append(last)
    return chunks


def encode_sse(chunks: list[dict[str, Any]]) -> bytes:
    events = [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks]
    return b"".join(events) + b"data: [DONE]\n\n"


def error_json(error: ApiError) -> dict[str, Any]:
    return {
        "error": {"message": error.message, "type": error.type, "param": None, "code": error.type}
    }


def models_json(models: Sequence[str]) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [
            {"id": m, "object": "model", "created": CREATED, "owned_by": "mock"} for m in models
        ],
    }


def tool_messages(request: RecordedRequest) -> list[dict[str, Any]]:
    """The ``role: tool`` messages (tool results) the CLI sent back, in order."""
    return [m for m in request.messages if m.get("role") == "tool"]


def tool_result_texts(request: RecordedRequest) -> list[str]:
    """The content of each tool result, as text."""
    return [_content_text(m.get("content")) for m in tool_messages(request)]


def offered_tool_names(request: RecordedRequest) -> list[str]:
    """The function names in the request's ``tools`` (``RecordedRequest.tool_names`` reads the
    Anthropic shape)."""
    names: list[str] = []
    for tool in request.body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping):
            names.append(str(function.get("name", "")))
    return names


def _tool_call_deltas(answer: ToolCall, call_id: str) -> list[dict[str, Any]]:
    raw = json.dumps(dict(answer.input))
    first = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": answer.name, "arguments": ""},
    }
    pieces = [
        {"index": 0, "function": {"arguments": raw[i : i + ARGUMENT_CHUNK]}}
        for i in range(0, len(raw), ARGUMENT_CHUNK)
    ]
    return [first, *pieces]


def _text(answer: Reply | ToolCall) -> str | None:
    return answer.text if isinstance(answer, Reply) else answer.text_before


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _route(path: str) -> str:
    return path.split("?", 1)[0].rstrip("/")


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
