"""The mock Responses API on its own, spoken to over HTTP like Codex does (no CLI needed)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.mockapi import ApiError, Reply, ToolCall, Usage
from tests.mockapi.openai_responses import MockResponsesApi, input_texts, tool_outputs

TOOLS = [
    {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
    {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
]


@pytest.fixture
def api() -> Iterator[MockResponsesApi]:
    with MockResponsesApi(reset_in_s=90) as server:
        yield server


def post(api: MockResponsesApi, body: dict[str, Any]) -> tuple[int, Any, bytes]:
    request = urllib.request.Request(
        api.base_url + "/v1/responses",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": "Bearer dummy"},
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def main_request(*items: dict[str, Any]) -> dict[str, Any]:
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    return {"model": "gpt-5.5", "stream": True, "tools": TOOLS, "input": [user, *items]}


def sse_events(payload: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line.removeprefix("data: "))
        for line in payload.decode().splitlines()
        if line.startswith("data: ")
    ]


def test_a_reply_streams_a_message_item_and_a_completed_response_with_usage(api):
    api.set_script(Reply("Hello there, friend.", Usage(1000, 50, cache_read_input_tokens=200)))

    status, headers, body = post(api, main_request())

    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    events = sse_events(body)
    assert [e["type"] for e in events] == [
        "response.created",
        "response.output_item.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert "".join(e["delta"] for e in events if "delta" in e) == "Hello there, friend."
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    usage = events[-1]["response"]["usage"]
    assert usage["input_tokens"] == 1200  # the API counts the cached tokens in the input
    assert usage["input_tokens_details"] == {"cached_tokens": 200}
    assert (usage["output_tokens"], usage["total_tokens"]) == (50, 1250)
    assert events[-1]["response"]["model"] == "gpt-5.5"


def test_a_function_tool_call_carries_json_arguments_after_its_preamble(api):
    api.set_script(ToolCall("exec_command", {"cmd": "ls"}, text_before="Looking."))

    _, _, body = post(api, main_request())

    done = [e["item"] for e in sse_events(body) if e["type"] == "response.output_item.done"]
    assert [item["type"] for item in done] == ["message", "function_call"]
    call = done[1]
    assert (call["name"], json.loads(call["arguments"]), call["call_id"]) == (
        "exec_command",
        {"cmd": "ls"},
        "call_mock_000",
    )


def test_a_call_to_a_custom_tool_is_a_freeform_custom_tool_call(api):
    patch = "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n"
    api.set_script(ToolCall("apply_patch", {"input": patch}))

    _, _, body = post(api, main_request())

    (item,) = [e["item"] for e in sse_events(body) if e["type"] == "response.output_item.done"]
    assert (item["type"], item["name"], item["input"]) == ("custom_tool_call", "apply_patch", patch)


def test_a_429_carries_the_rate_limit_headers_and_a_usage_limit_its_reset(api):
    api.set_script(
        ApiError(429, "rate_limit_exceeded", "slow down"),
        ApiError(429, "usage_limit_reached", "The usage limit has been reached"),
    )

    status, headers, body = post(api, main_request())
    _, _, limited = post(api, main_request())

    assert status == 429
    assert headers["retry-after"] == "90"
    assert headers["x-codex-primary-used-percent"] == "100"
    reset = int(headers["x-codex-primary-reset-at"])
    assert abs(reset - (time.time() + 90)) < 5
    assert json.loads(body)["error"] == {
        "message": "slow down",
        "type": "rate_limit_exceeded",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    error = json.loads(limited)["error"]
    assert (error["type"], error["resets_in_seconds"]) == ("usage_limit_reached", 90)
    assert abs(error["resets_at"] - reset) < 5


def test_other_errors_have_their_status_and_an_openai_error_body(api):
    api.set_script(ApiError(401, "invalid_request_error", "Incorrect API key provided"))

    status, headers, body = post(api, main_request())

    assert status == 401
    assert "retry-after" not in headers
    assert json.loads(body)["error"]["message"] == "Incorrect API key provided"


def test_requests_without_tools_are_side_requests_and_consume_no_turn(api):
    api.set_script(Reply("scripted"))

    _, _, side = post(api, {"model": "gpt-5.5", "stream": True, "input": "title this"})
    _, _, main = post(api, main_request())

    assert "(side request)" in side.decode()
    assert "scripted" in main.decode()
    assert [r.turn for r in api.requests] == [None, 0]


def test_tools_offered_as_an_input_item_make_a_main_request_and_count_as_custom(api):
    api.set_script(ToolCall("exec", {"input": "text(1)"}))
    namespace = {
        "type": "namespace",
        "name": "functions",
        "tools": [{"type": "custom", "name": "exec"}],
    }
    body = {
        "model": "gpt-6.1-sol",
        "stream": True,
        "input": [{"type": "additional_tools", "tools": [namespace]}],
    }

    _, _, answer = post(api, body)

    assert [r.turn for r in api.requests] == [0]
    (item,) = [e["item"] for e in sse_events(answer) if e["type"] == "response.output_item.done"]
    assert (item["type"], item["input"]) == ("custom_tool_call", "text(1)")


def test_the_request_readers_find_the_prompt_and_the_tool_outputs(api):
    api.set_script(Reply("ok"))
    output = {"type": "function_call_output", "call_id": "call_mock_000", "output": "done\n"}

    post(api, main_request(output))

    (request,) = api.requests
    assert input_texts(request) == ["hi"]
    assert tool_outputs(request) == [output]
