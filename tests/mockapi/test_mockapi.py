"""The mock Messages API on its own, spoken to over HTTP like the CLI does (no CLI needed)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.mockapi import (
    ApiError,
    MockMessagesApi,
    Reply,
    ToolCall,
    Usage,
    expected_cost,
)

TOOLS = [{"name": "Write", "input_schema": {"type": "object"}}]


@pytest.fixture
def api() -> Iterator[MockMessagesApi]:
    with MockMessagesApi() as server:
        yield server


def post(api: MockMessagesApi, body: dict[str, Any], path: str = "/v1/messages?beta=true"):
    request = urllib.request.Request(
        api.base_url + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "x-api-key": "dummy"},
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.headers["content-type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["content-type"], error.read()


def main_request(text: str = "hi", stream: bool = True) -> dict[str, Any]:
    return {
        "model": "claude-opus-5-5",
        "stream": stream,
        "tools": TOOLS,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
    }


def sse_events(payload: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line.removeprefix("data: "))
        for line in payload.decode().splitlines()
        if line.startswith("data: ")
    ]


def test_a_reply_streams_the_standard_event_sequence(api):
    api.set_script(Reply("Hello there.", Usage(input_tokens=7, output_tokens=3)))

    status, content_type, payload = post(api, main_request())
    events = sse_events(payload)

    assert (status, content_type) == (200, "text/event-stream")
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[0]["message"]["usage"]["input_tokens"] == 7
    assert events[2]["delta"] == {"type": "text_delta", "text": "Hello there."}
    assert events[4]["delta"]["stop_reason"] == "end_turn"
    assert events[4]["usage"] == {"output_tokens": 3}


def test_a_tool_call_streams_its_input_as_json_pieces_after_an_empty_input(api):
    content = "x" * 100
    api.set_script(ToolCall("Write", {"file_path": "a.txt", "content": content}, "Writing."))

    events = sse_events(post(api, main_request())[2])

    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert starts[0] == {"type": "text", "text": ""}
    assert starts[1] == {"type": "tool_use", "id": "toolu_mock_000", "name": "Write", "input": {}}
    pieces = [e["delta"]["partial_json"] for e in events if e.get("index") == 1 and "delta" in e]
    assert len(pieces) > 1
    assert json.loads("".join(pieces)) == {"file_path": "a.txt", "content": content}
    assert events[-2]["delta"]["stop_reason"] == "tool_use"


def test_a_non_streaming_request_gets_the_whole_message_as_json(api):
    api.set_script(Reply("Plain."))

    status, content_type, payload = post(api, main_request(stream=False))
    message = json.loads(payload)

    assert (status, content_type) == (200, "application/json")
    assert message["content"] == [{"type": "text", "text": "Plain."}]
    assert message["usage"]["output_tokens"] == 100


def test_turns_are_answered_in_order_and_then_the_script_is_exhausted(api):
    api.set_script(Reply("one"), Reply("two"))

    texts = [sse_events(post(api, main_request())[2])[2]["delta"]["text"] for _ in range(3)]

    assert texts == ["one", "two", "(script exhausted)"]
    assert [r.turn for r in api.main_requests] == [0, 1, 2]
    assert [r.turn for r in api.exhausted_requests] == [2]
    assert api.script.turns_used == 2


def test_a_callable_turn_answers_from_the_recorded_request(api):
    api.set_script(lambda request: Reply(f"you said {request.user_texts()[-1]}"))

    events = sse_events(post(api, main_request("ping"))[2])

    assert events[2]["delta"]["text"] == "you said ping"


def test_a_failing_callable_turn_answers_500_with_the_exception(api):
    api.set_script(lambda request: request.tool_results()[0])

    status, _, payload = post(api, main_request())

    assert status == 500
    assert "IndexError" in json.loads(payload)["error"]["message"]


def test_requests_without_tools_are_side_requests_and_consume_no_turn(api):
    api.set_script(Reply("scripted"))

    side = json.loads(post(api, {"model": "claude-haiku", "messages": [], "stream": False})[2])
    main = sse_events(post(api, main_request())[2])

    assert side["content"][0]["text"] == "(side request)"
    assert side["usage"]["input_tokens"] == side["usage"]["output_tokens"] == 0
    assert main[2]["delta"]["text"] == "scripted"
    assert [r.scripted for r in api.requests] == [False, True]


def test_an_api_error_turn_answers_with_its_status_and_error_body(api):
    api.set_script(ApiError(529, "overloaded_error", "Overloaded"))

    status, _, payload = post(api, main_request())

    assert status == 529
    assert json.loads(payload) == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


def test_other_paths_are_recorded_and_answered_404(api):
    status, _, _ = post(api, {}, path="/v1/complete")

    assert status == 404
    assert [(r.path, r.scripted) for r in api.requests] == [("/v1/complete", False)]


def test_the_recorded_request_keeps_headers_and_body(api):
    post(api, main_request("remember me"))

    (request,) = api.requests
    assert request.header("X-API-KEY") == "dummy"
    assert request.user_texts() == ["remember me"]
    assert request.tool_names() == ["Write"]


def test_expected_cost_prices_each_kind_of_token_per_million():
    million = Usage(1_000_000, 1_000_000, 1_000_000, 1_000_000)

    assert expected_cost([million]) == pytest.approx(4 + 20 + 5 + 0.2)
    assert expected_cost([Reply("a"), ToolCall("Bash"), ApiError()]) == pytest.approx(0.012)
