"""How an answer looks on the wire: Messages API JSON, SSE stream events, error bodies."""

from __future__ import annotations

import json
from typing import Any

from tests.mockapi.turns import ApiError, Reply, ToolCall, Usage

JSON_CHUNK = 24  # tool input arrives in input_json_delta pieces of this many characters


def usage_json(usage: Usage, *, output_tokens: int | None = None) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": usage.output_tokens if output_tokens is None else output_tokens,
    }


def content_blocks(answer: Reply | ToolCall, tool_use_id: str) -> list[dict[str, Any]]:
    if isinstance(answer, Reply):
        return [{"type": "text", "text": answer.text}]
    blocks: list[dict[str, Any]] = []
    if answer.text_before:
        blocks.append({"type": "text", "text": answer.text_before})
    blocks.append(
        {"type": "tool_use", "id": tool_use_id, "name": answer.name, "input": dict(answer.input)}
    )
    return blocks


def stop_reason(answer: Reply | ToolCall) -> str:
    return "tool_use" if isinstance(answer, ToolCall) else "end_turn"


def message_json(
    answer: Reply | ToolCall, *, message_id: str, model: str, tool_use_id: str
) -> dict[str, Any]:
    """The whole message, as a non-streaming answer."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content_blocks(answer, tool_use_id),
        "stop_reason": stop_reason(answer),
        "stop_sequence": None,
        "usage": usage_json(answer.usage),
    }


def stream_events(
    answer: Reply | ToolCall, *, message_id: str, model: str, tool_use_id: str
) -> list[dict[str, Any]]:
    """The same message as SSE events. Like the real API, ``message_start`` carries a
    placeholder ``output_tokens: 1`` and ``message_delta`` the final count."""
    start = message_json(answer, message_id=message_id, model=model, tool_use_id=tool_use_id)
    start.update(content=[], stop_reason=None, usage=usage_json(answer.usage, output_tokens=1))
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(content_blocks(answer, tool_use_id)):
        events.extend(_block_events(index, block))
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(answer), "stop_sequence": None},
            "usage": {"output_tokens": answer.usage.output_tokens},
        }
    )
    events.append({"type": "message_stop"})
    return events


def _block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    if block["type"] == "text":
        opening: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": block["text"]}]
    else:
        opening = {**block, "input": {}}
        raw = json.dumps(block["input"])
        deltas = [
            {"type": "input_json_delta", "partial_json": raw[i : i + JSON_CHUNK]}
            for i in range(0, len(raw), JSON_CHUNK)
        ]
    return [
        {"type": "content_block_start", "index": index, "content_block": opening},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def encode_sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
    )


def error_json(error: ApiError) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error.type, "message": error.message}}
