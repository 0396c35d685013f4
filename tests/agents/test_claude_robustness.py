"""The parser's shortcut for large tool-output lines, and its refusal to ever raise."""

from __future__ import annotations

import json
import random
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from ralphctl.agents.claude_stream import ClaudeStreamParser
from ralphctl.agents.events import AgentEvent, RawLine, ToolOutput
from tests.agents.streams import cassette_lines, exited

BIG = 70_000  # well past the size where the shortcut applies


def reference_events(line: bytes) -> list[AgentEvent]:
    """What a ``user`` line means, by the book: one ToolOutput per tool_result block."""
    obj = json.loads(line)
    return [
        ToolOutput(block["tool_use_id"], block.get("is_error") is True)
        for block in obj["message"]["content"]
        if block.get("type") == "tool_result"
    ]


def user_line(blocks: list[dict[str, Any]], *, structured: object, first: str = "type") -> bytes:
    obj: dict[str, Any] = {
        "type": "user",
        "message": {"role": "user", "content": blocks},
        "parent_tool_use_id": None,
        "session_id": "s",
        "tool_use_result": structured,
    }
    ordered = {first: obj.pop(first), **obj}
    return orjson.dumps(ordered)


def tool_result(
    tool_use_id: str, content: str, is_error: bool | None, order: list[str]
) -> dict[str, Any]:
    fields: dict[str, Any] = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}
    if is_error is not None:
        fields["is_error"] = is_error
    return {key: fields[key] for key in order if key in fields}


TRAPS = [
    '"tool_use_id":"toolu_fake"',
    '"is_error":true',
    '"tool_use_result":',
    '"type":"tool_result"',
    "\\",
    '\\"',
    "\n\t",
    "é→",
]
contents = st.lists(st.sampled_from([*TRAPS, "x" * 1000, "def f():\n    return 1\n"]), max_size=30)
key_orders = st.permutations(["tool_use_id", "type", "content", "is_error"])


@settings(max_examples=60, deadline=None)
@given(
    pieces=contents,
    is_error=st.sampled_from([True, False, None]),
    order=key_orders,
    blocks=st.integers(min_value=1, max_value=2),
    structured_trap=st.booleans(),
)
def test_large_user_lines_mean_exactly_what_full_parsing_says(
    pieces: list[str], is_error: bool | None, order: list[str], blocks: int, structured_trap: bool
) -> None:
    content = "".join(pieces).ljust(BIG, "y")
    line_blocks = [
        tool_result(f"toolu_{n}", content, is_error if n == 0 else None, list(order))
        for n in range(blocks)
    ]
    structured = {"tool_use_id": "toolu_trap", "is_error": True} if structured_trap else content
    line = user_line(line_blocks, structured=structured)

    assert ClaudeStreamParser().feed(line) == reference_events(line)


def test_a_large_user_line_in_another_key_order_is_parsed_in_full() -> None:
    block = tool_result("toolu_1", "z" * BIG, True, ["type", "content", "is_error", "tool_use_id"])
    line = user_line([block], structured="z" * BIG, first="tool_use_result")

    assert ClaudeStreamParser().feed(line) == [ToolOutput("toolu_1", is_error=True)]


def test_a_large_user_line_of_plain_text_gives_no_event() -> None:
    line = user_line([{"type": "text", "text": "Stop hook feedback:\n" + "w" * BIG}], structured={})

    assert ClaudeStreamParser().feed(line) == []


def test_a_large_user_line_cut_off_by_a_kill_is_an_unparsed_line_shown_as_printed() -> None:
    block = tool_result("toolu_1", "q" * BIG, None, ["tool_use_id", "type", "content"])
    line = user_line([block], structured="q")[: BIG // 2]
    parser = ClaudeStreamParser()

    assert parser.feed(line) == [RawLine.of(line)]
    assert parser.finish(exited(-9)).unparsed_lines == 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=5,
)
REAL_LINES = [
    json.loads(line)
    for name in ["tool_use_turn", "api_error_529", "partial_messages", "subagent", "rate_limited"]
    for line in cassette_lines(name)
]


def paths(value: object, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside a JSON value where another value could stand."""
    children: list[tuple[Any, object]] = []
    if isinstance(value, dict):
        children = list(value.items())
    elif isinstance(value, list):
        children = list(enumerate(value))
    return [p for key, child in children for p in [(*prefix, key), *paths(child, (*prefix, key))]]


def replaced(value: Any, path: tuple[Any, ...], new: object) -> Any:
    copy = json.loads(json.dumps(value))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copy


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_real_line_with_any_field_of_any_shape_does_not_make_the_parser_raise(
    data: st.DataObject,
) -> None:
    line = data.draw(st.sampled_from(REAL_LINES))
    path = data.draw(st.sampled_from(paths(line)))
    mutated = replaced(line, path, data.draw(json_values))
    parser = ClaudeStreamParser()

    parser.feed(json.dumps(mutated).encode())
    parser.finish(exited(0))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_no_bytes_make_the_parser_raise(data: bytes) -> None:
    parser = ClaudeStreamParser()
    parser.feed(data)
    parser.finish(exited(None))


def test_memory_stays_bounded_over_a_long_run() -> None:
    parser = ClaudeStreamParser()
    rng = random.Random(7)
    for n in range(5000):
        parser.feed(
            orjson.dumps(
                {
                    "type": "system",
                    "subtype": "permission_denied",
                    "tool_name": "Bash",
                    "message": str(rng.random()),
                }
            )
        )
        text = {"type": "text", "text": f"step {n}"}
        parser.feed(
            orjson.dumps(
                {"type": "assistant", "message": {"id": f"m{n}", "content": [text]}},
            )
        )

    result = parser.finish(exited(-9))
    assert len(result.permission_denials) == 100
    assert result.final_text == "step 4999"
