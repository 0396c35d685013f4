"""The Gemini API as the mock serves it, for the Gemini CLI (``GOOGLE_GEMINI_BASE_URL``).

Model calls are ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` (the agent's
loop: SSE chunks of ``GenerateContentResponse``) and ``:generateContent`` (one JSON answer:
the CLI's helper calls such as model routing). A main request is one that offers the model
function declarations (the agent's tools); helper calls offer none and get the side answer.
``:countTokens`` gets a count. Errors are Google error bodies (``{"error": {"code",
"message", "status", "details"}}``); a 429 carries a ``RetryInfo`` detail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from tests.mockapi.provider import Payload
from tests.mockapi.recorded import RecordedRequest
from tests.mockapi.turns import ApiError, Reply, ToolCall, Usage

MODEL_CALL = re.compile(r"^/v1(?:beta|alpha)?/models/(?P<model>[^/:]+):(?P<method>\w+)$")
STREAM = "streamGenerateContent"
GENERATE = "generateContent"
COUNT_TOKENS = "countTokens"
#: The Google RPC status names of the HTTP statuses the mock is asked for.
GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
#: The ``retryDelay`` a 429 suggests (the CLI waits at least this long before a retry).
RETRY_DELAY = "1s"
TEXT_CHUNK = 40  # a reply's text arrives in SSE chunks of this many characters


def model_call(path: str) -> tuple[str, str] | None:
    """``(model, method)`` of a model call's path (query string ignored), else None."""
    match = MODEL_CALL.match(path.split("?", 1)[0])
    return (match["model"], match["method"]) if match else None


class GeminiApi:
    name = "gemini"

    def is_api_call(self, method: str, path: str) -> bool:
        call = model_call(path)
        return method == "POST" and call is not None and call[1] in (STREAM, GENERATE)

    def is_main_request(self, body: Mapping[str, Any]) -> bool:
        """The agent's loop offers its tools as function declarations; helper calls do not."""
        return bool(function_names(body))

    def answer(self, request: RecordedRequest, answer: Reply | ToolCall, suffix: str) -> Payload:
        model = (model_call(request.path) or ("gemini-mock", GENERATE))[0]
        chunks = response_chunks(answer, model=model, response_id=f"resp_mock_{suffix}")
        if (model_call(request.path) or ("", ""))[1] == STREAM:
            return Payload(encode_sse(chunks), "text/event-stream")
        return Payload(json.dumps(merged(chunks)).encode())

    def error(self, error: ApiError) -> Payload:
        return Payload(json.dumps(error_json(error)).encode(), status=error.status)

    def other(self, method: str, path: str) -> Payload:
        call = model_call(path)
        if method == "POST" and call is not None and call[1] == COUNT_TOKENS:
            return Payload(json.dumps({"totalTokens": 0}).encode())
        if method == "HEAD":
            return Payload(b"", "text/plain")
        return self.error(ApiError(404, "NOT_FOUND", f"mock has no {method} {path}"))


def usage_metadata(usage: Usage) -> dict[str, int]:
    """``usageMetadata``: the prompt count includes the cached tokens, as Gemini reports it;
    Anthropic-style cache writes have no Gemini equivalent and count as plain input."""
    prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
    metadata = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": prompt + usage.output_tokens,
    }
    if usage.cache_read_input_tokens:
        metadata["cachedContentTokenCount"] = usage.cache_read_input_tokens
    return metadata


def parts(answer: Reply | ToolCall) -> list[dict[str, Any]]:
    if isinstance(answer, Reply):
        return [{"text": answer.text}]
    found: list[dict[str, Any]] = [{"text": answer.text_before}] if answer.text_before else []
    found.append({"functionCall": {"name": answer.name, "args": dict(answer.input)}})
    return found


def response_chunks(
    answer: Reply | ToolCall, *, model: str, response_id: str
) -> list[dict[str, Any]]:
    """The answer as streamed ``GenerateContentResponse`` chunks: text in pieces, a function
    call whole, ``finishReason`` and ``usageMetadata`` on the last chunk."""
    pieces: list[dict[str, Any]] = []
    for part in parts(answer):
        text = part.get("text")
        if isinstance(text, str) and len(text) > TEXT_CHUNK:
            pieces += [{"text": text[i : i + TEXT_CHUNK]} for i in range(0, len(text), TEXT_CHUNK)]
        else:
            pieces.append(part)
    chunks = [_chunk([piece], model, response_id) for piece in pieces]
    last = chunks[-1]
    last["candidates"][0]["finishReason"] = "STOP"
    last["usageMetadata"] = usage_metadata(answer.usage)
    return chunks


def _chunk(content: list[dict[str, Any]], model: str, response_id: str) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": content}, "index": 0}],
        "modelVersion": model,
        "responseId": response_id,
    }


def merged(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The chunks as one non-streaming answer."""
    whole = json.loads(json.dumps(chunks[-1]))
    whole["candidates"][0]["content"]["parts"] = [
        part for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]
    ]
    return dict(whole)


def encode_sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(f"data: {json.dumps(chunk)}\r\n\r\n".encode() for chunk in chunks)


def error_json(error: ApiError) -> dict[str, Any]:
    """A Google error body. ``error.type`` is its status name when written like one
    (``RESOURCE_EXHAUSTED``), else the name of ``error.status``."""
    status = error.type if error.type.isupper() else GOOGLE_STATUS.get(error.status, "UNKNOWN")
    body: dict[str, Any] = {"code": error.status, "message": error.message, "status": status}
    if error.status == 429:
        body["details"] = [{"@type": RETRY_INFO, "retryDelay": RETRY_DELAY}]
    return {"error": body}


# --- reading what the CLI sent ----------------------------------------------------------------


def function_names(body: Mapping[str, Any]) -> list[str]:
    """The names of the function declarations a request offers."""
    return [
        str(declaration.get("name", ""))
        for tool in body.get("tools") or []
        if isinstance(tool, dict)
        for declaration in tool.get("functionDeclarations") or []
        if isinstance(declaration, dict)
    ]


def user_texts(body: Mapping[str, Any]) -> list[str]:
    """Every text part of the ``user`` turns of ``contents``, in order."""
    return [
        part["text"]
        for content in body.get("contents") or []
        if isinstance(content, dict) and content.get("role") == "user"
        for part in content.get("parts") or []
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]


def function_responses(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every ``functionResponse`` part the CLI sent back, in order."""
    return [
        part["functionResponse"]
        for content in body.get("contents") or []
        if isinstance(content, dict)
        for part in content.get("parts") or []
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict)
    ]
