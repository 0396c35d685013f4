"""The mock Gemini API on its own, spoken to over HTTP like the Gemini CLI does (no CLI needed)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.mockapi import ApiError, MockApi, Reply, ToolCall, Usage
from tests.mockapi.gemini import GeminiApi, function_responses, user_texts

STREAM = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
GENERATE = "/v1beta/models/gemini-2.5-flash:generateContent"
TOOLS = [{"functionDeclarations": [{"name": "write_file", "parameters": {"type": "object"}}]}]


@pytest.fixture
def api() -> Iterator[MockApi]:
    with MockApi(GeminiApi()) as server:
        yield server


def post(api: MockApi, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
    request = urllib.request.Request(
        api.base_url + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "x-goog-api-key": "dummy"},
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.headers["content-type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["content-type"], error.read()


def main_body(text: str = "hi") -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": text}]}], "tools": TOOLS}


def chunks(payload: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(event.removeprefix("data: "))
        for event in payload.decode().split("\r\n\r\n")
        if event.startswith("data: ")
    ]


def test_a_streamed_reply_comes_in_text_chunks_with_usage_on_the_last(api: MockApi) -> None:
    text = "A reply long enough to be cut into several pieces of text."
    api.set_script(Reply(text, Usage(input_tokens=1000, output_tokens=100)))

    status, content_type, payload = post(api, STREAM, main_body())

    assert (status, content_type) == (200, "text/event-stream")
    received = chunks(payload)
    assert len(received) > 1
    assert "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in received) == text
    assert received[-1]["candidates"][0]["finishReason"] == "STOP"
    assert received[-1]["usageMetadata"] == {
        "promptTokenCount": 1000,
        "candidatesTokenCount": 100,
        "totalTokenCount": 1100,
    }


def test_a_tool_call_is_a_function_call_part_after_its_text(api: MockApi) -> None:
    usage = Usage(input_tokens=1200, output_tokens=80, cache_read_input_tokens=300)
    api.set_script(
        ToolCall("write_file", {"file_path": "a.txt"}, text_before="Writing.", usage=usage)
    )

    _, _, payload = post(api, STREAM, main_body())

    parts = [p for c in chunks(payload) for p in c["candidates"][0]["content"]["parts"]]
    assert parts == [
        {"text": "Writing."},
        {"functionCall": {"name": "write_file", "args": {"file_path": "a.txt"}}},
    ]
    # Gemini counts cached tokens inside the prompt count
    assert chunks(payload)[-1]["usageMetadata"]["promptTokenCount"] == 1500
    assert chunks(payload)[-1]["usageMetadata"]["cachedContentTokenCount"] == 300


def test_helper_calls_offer_no_tools_and_get_the_side_answer_without_a_turn(api: MockApi) -> None:
    api.set_script(Reply("scripted"))
    api.script.side_answer = Reply('{"complexity_score": 10}', Usage(0, 0))

    status, content_type, payload = post(
        api, GENERATE, {"contents": [{"role": "user", "parts": [{"text": "route"}]}]}
    )

    assert (status, content_type) == (200, "application/json")
    answer = json.loads(payload)
    assert answer["candidates"][0]["content"]["parts"] == [{"text": '{"complexity_score": 10}'}]
    assert api.side_requests[0].turn is None
    assert api.script.turns_used == 0


def test_errors_are_google_error_bodies_and_a_429_says_when_to_retry(api: MockApi) -> None:
    api.set_script(ApiError(500, "api_error", "boom"), ApiError(429, "RESOURCE_EXHAUSTED", "quota"))

    first = post(api, STREAM, main_body())
    second = post(api, STREAM, main_body())

    assert first[0] == 500
    assert json.loads(first[2]) == {"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}
    assert second[0] == 429
    error = json.loads(second[2])["error"]
    assert error["status"] == "RESOURCE_EXHAUSTED"
    assert error["details"] == [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}
    ]


def test_token_counts_and_unknown_routes_are_answered(api: MockApi) -> None:
    counted = post(api, "/v1beta/models/gemini-2.5-flash:countTokens", {"contents": []})
    missing = post(api, "/v1beta/files", {})

    assert (counted[0], json.loads(counted[2])) == (200, {"totalTokens": 0})
    assert missing[0] == 404
    assert json.loads(missing[2])["error"]["status"] == "NOT_FOUND"


def test_the_recorded_conversation_can_be_read_back(api: MockApi) -> None:
    api.set_script(Reply("ok"))
    body = main_body("Do the task.")
    body["contents"].append(
        {"role": "user", "parts": [{"functionResponse": {"name": "write_file", "response": {}}}]}
    )

    post(api, STREAM, body)

    (request,) = api.main_requests
    assert user_texts(request.body) == ["Do the task."]
    assert function_responses(request.body) == [{"name": "write_file", "response": {}}]
