"""Whatever opencode (or anything else) prints, the parser never raises."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ralphctl.agents.opencode_stream import OpencodeStreamParser
from tests.agents.opencode.streams import cassette_lines, exited

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
event_types = st.sampled_from(["step_start", "step_finish", "text", "tool_use", "error", "x"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=20))
def test_arbitrary_bytes_never_crash_the_parser(lines):
    parser = OpencodeStreamParser("m/x")
    for line in lines:
        parser.feed(line)
    parser.finish(exited(0))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(event_types, json_values, json_values), max_size=12))
def test_events_of_any_shape_never_crash_the_parser(shapes):
    parser = OpencodeStreamParser(None)
    for kind, part, error in shapes:
        event = {"type": kind, "sessionID": part, "part": part, "error": error, "timestamp": error}
        parser.feed(json.dumps(event).encode())
    parser.finish(exited(1, timed_out=True))


@settings(max_examples=100, deadline=None)
@given(
    st.integers(min_value=0, max_value=2000), st.sampled_from(["write_file", "rate_limited_429"])
)
def test_a_cassette_cut_anywhere_never_crashes_the_parser(cut, name):
    data = b"\n".join(cassette_lines(name))[:cut]
    parser = OpencodeStreamParser("m/x")
    for line in data.split(b"\n"):
        parser.feed(line)
    parser.finish(exited(None))
