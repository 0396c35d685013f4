"""No agent's stream parser raises, whatever its input: bytes of any kind, or a line of the
agent's own recorded output with any field (and any field of its ``message``) of any shape.

One module over the registry's parsers; what bounds each parser's memory, and other
agent-specific shapes, stay in the agents' own robustness tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ralphctl.agents import registry
from tests.agents.streams import exited

CASSETTES = Path(__file__).parent / "cassettes"
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def recorded_objects(agent: str) -> list[dict[str, Any]]:
    """Every JSON object line of the agent's recorded ``*.jsonl`` output (not the side logs)."""
    objects = []
    for path in sorted((CASSETTES / agent).glob("*.jsonl")):
        if "." in path.stem:  # <name>.analytics.jsonl and the like: not the agent's stdout
            continue
        for raw in path.read_bytes().splitlines():
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict) and obj:
                objects.append(obj)
    return objects


JSON_AGENTS = [name for name in registry.known_agents() if recorded_objects(name)]


@pytest.mark.parametrize("agent", registry.known_agents())
@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=8), st.integers(-300, 300) | st.none())
def test_no_bytes_make_a_parser_raise(agent: str, lines: list[bytes], code: int | None) -> None:
    parser = registry.stream_parser(agent)
    for raw in lines:
        parser.feed(raw)

    parser.finish(exited(code))


@pytest.mark.parametrize("agent", JSON_AGENTS)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_recorded_line_with_any_field_of_any_shape_does_not_make_a_parser_raise(
    agent: str, data: st.DataObject
) -> None:
    original: dict[str, Any] = data.draw(st.sampled_from(recorded_objects(agent)))
    key = data.draw(st.sampled_from(sorted(original)))
    mutated = {**original, key: data.draw(ANY_JSON)}
    message = mutated.get("message")
    if isinstance(message, dict) and message:
        inner = data.draw(st.sampled_from(sorted(message)))
        mutated["message"] = {**message, inner: data.draw(ANY_JSON)}
    parser = registry.stream_parser(agent)

    parser.feed(json.dumps(mutated, separators=(",", ":")).encode())

    parser.finish(exited(data.draw(st.integers(-300, 300)), data.draw(st.text(max_size=80))))


def test_every_agent_with_recorded_json_output_is_covered() -> None:
    assert {"amp", "claude", "codex", "copilot", "cursor", "gemini", "opencode"} <= set(JSON_AGENTS)
