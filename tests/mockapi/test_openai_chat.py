"""The mock Chat Completions API on its own, spoken to over HTTP like an OpenAI client does."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.mockapi import ApiError, MockApi, Reply, ToolCall, Usage
from tests.mockapi.openai_chat import OpenAIChat, offered_tool_names, tool_result_texts

TOOLS = [{"type": "function", "function": {"name": "write", "parameters": {"type": "object"}}}]


@pytest.fixture
def api() -> Iterator[MockApi]:
    with MockApi(OpenAIChat(retry_after_s=2)) as server:
        yield server


def call(
    api: MockApi, body: dict[str, Any] | None, path: str = "/v1/chat/completions"
) -> tuple[int, Any, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        api.base_url + path,
        data=data,
        headers={"content-type": "application/json", "authorization": "Bearer dummy"},
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def chat(text: str = "hi", *, stream: bool = True, usage: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "gpt-mock",
        "stream": stream,
        "tools": TOOLS,
        "messages": [{"role": "user", "content": text}],
    }
    if usage:
        body["stream_options"] = {"include_usage": True}
    return body


def chunks(payload: bytes) -> list[Any]:
    lines = [
        x.removeprefix("data: ") for x in payload.decode().splitlines() if x.startswith("data: ")
    ]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


def test_a_reply_streams_role_text_finish_and_usage_chunks(api):
    api.set_script(
        Reply("Hello.", Usage(input_tokens=7, output_tokens=3, cache_read_input_tokens=2))
    )

    status, headers, payload = call(api, chat())
    events = chunks(payload)

    assert (status, headers["content-type"]) == (200, "text/event-stream")
    assert {e["object"] for e in events} == {"chat.completion.chunk"}
    assert [e["choices"][0]["delta"] for e in events[:-1]] == [
        {"role": "assistant", "content": ""},
        {"content": "Hello."},
        {},
    ]
    assert events[-2]["choices"][0]["finish_reason"] == "stop"
    assert events[-1]["choices"] == []
    assert events[-1]["usage"] == {
        "prompt_tokens": 9,
        "completion_tokens": 3,
        "total_tokens": 12,
        "prompt_tokens_details": {"cached_tokens": 2},
    }


def test_without_include_usage_no_usage_chunk_is_sent(api):
    api.set_script(Reply("Hello."))

    events = chunks(call(api, chat(usage=False))[2])

    assert all("usage" not in e for e in events)


def test_a_tool_call_streams_its_id_and_name_then_the_arguments_in_pieces(api):
    content = "x" * 100
    api.set_script(ToolCall("write", {"filePath": "a.txt", "content": content}, "Writing."))

    events = chunks(call(api, chat())[2])

    calls = [
        c for e in events if e["choices"] for c in e["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert calls[0] == {
        "index": 0,
        "id": "call_mock_000",
        "type": "function",
        "function": {"name": "write", "arguments": ""},
    }
    pieces = [c["function"]["arguments"] for c in calls[1:]]
    assert len(pieces) > 1
    assert json.loads("".join(pieces)) == {"filePath": "a.txt", "content": content}
    assert events[1]["choices"][0]["delta"] == {"content": "Writing."}
    assert events[-2]["choices"][0]["finish_reason"] == "tool_calls"


def test_a_non_streaming_request_gets_one_completion_with_usage(api):
    api.set_script(ToolCall("bash", {"command": "ls"}))

    status, _, payload = call(api, chat(stream=False))
    completion = json.loads(payload)

    assert status == 200
    assert completion["object"] == "chat.completion"
    choice = completion["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"][0]["function"] == {
        "name": "bash",
        "arguments": '{"command": "ls"}',
    }
    assert completion["usage"]["completion_tokens"] == 100


def test_requests_without_tools_are_side_requests(api):
    api.set_script(Reply("scripted"))

    side = json.loads(call(api, {"model": "gpt-mock", "messages": []})[2])
    main = chunks(call(api, chat())[2])

    assert side["choices"][0]["message"]["content"] == "(side request)"
    assert main[1]["choices"][0]["delta"]["content"] == "scripted"
    assert [r.scripted for r in api.requests] == [False, True]


def test_an_error_turn_answers_openai_error_json_with_its_status(api):
    api.set_script(ApiError(401, "invalid_api_key", "Incorrect API key"))

    status, _, payload = call(api, chat())

    assert status == 401
    assert json.loads(payload) == {
        "error": {
            "message": "Incorrect API key",
            "type": "invalid_api_key",
            "param": None,
            "code": "invalid_api_key",
        }
    }


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retryable_errors_carry_retry_after_headers(api, status):
    api.set_script(ApiError(status, "rate_limit_exceeded", "Try again"))

    answered, headers, _ = call(api, chat())

    assert answered == status
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("2", "2000")


def test_other_errors_carry_no_retry_after(api):
    api.set_script(ApiError(400, "invalid_request_error", "Bad"))

    _, headers, _ = call(api, chat())

    assert headers["retry-after"] is None


def test_models_are_listed_and_other_paths_answer_404(api):
    status, _, payload = call(api, None, path="/v1/models")
    missing, _, _ = call(api, None, path="/v1/embeddings")

    assert status == 200
    assert [m["id"] for m in json.loads(payload)["data"]] == ["gpt-mock"]
    assert missing == 404


def test_reading_helpers_find_tool_results_and_offered_tools(api):
    body = chat()
    body["messages"] += [
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]},
    ]
    call(api, body)

    (request,) = api.requests
    assert tool_result_texts(request) == ["ok"]
    assert offered_tool_names(request) == ["write"]
