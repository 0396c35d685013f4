"""Whatever arrives on stdin or sits in the tracker, the hook allows or blocks, never crashes."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralphctl.hook.arming import arm
from ralphctl.hook.handler import respond
from tests.hook.helpers import SESSION, decision, hook_env, run_hook, stop_event

relaxed = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Bytes that look like what the hook reads, mutated.
stdin_bytes = st.binary(max_size=400) | st.builds(
    lambda event, cut, junk: event[:cut] + junk,
    st.sampled_from([stop_event(), stop_event(text="<promise>COMPLETE</promise>")]),
    st.integers(0, 300),
    st.binary(max_size=20),
)
tracker_bytes = st.binary(max_size=400) | st.builds(
    lambda text, cut, junk: text[:cut] + junk,
    st.just(
        b"---\nactive: true\niteration: 1\nmax_iterations: 3\n"
        b'completion_marker: "<promise>X</promise>"\nstarted_at: "2026-01-01T00:00:00Z"\n'
        b"---\nbody\n"
    ),
    st.integers(0, 150),
    st.binary(max_size=20) | st.sampled_from([b"\n---\n", b": [", b'"', b"\\u12"]),
)


def assert_one_object_or_nothing(line: str | None) -> None:
    if line is not None:
        assert line.startswith("{")
        assert "\n" not in line
        assert isinstance(json.loads(line), dict)


def armed_project(root: str) -> Path:
    project = Path(root)
    return Path(arm(str(project), "Fix it", session_id=SESSION, max_iterations=3).path)


@relaxed
@given(raw=stdin_bytes)
def test_any_stdin_is_answered_with_one_json_object_or_nothing(raw):
    with tempfile.TemporaryDirectory() as root:
        armed_project(root)
        line, _ = respond(raw, [], hook_env(Path(root)), time.time())
        assert_one_object_or_nothing(line)


@relaxed
@given(content=tracker_bytes, text=st.sampled_from(["working", "<promise>COMPLETE</promise>"]))
def test_any_tracker_content_is_answered_with_one_json_object_or_nothing(content, text):
    with tempfile.TemporaryDirectory() as root:
        armed_project(root).write_bytes(content)
        line, _ = respond(stop_event(text=text), [], hook_env(Path(root)), time.time())
        assert_one_object_or_nothing(line)


@settings(deadline=None, max_examples=15)
@given(raw=stdin_bytes, content=tracker_bytes)
def test_as_a_process_it_always_exits_zero(raw, content):
    with tempfile.TemporaryDirectory() as root:
        armed_project(root).write_bytes(content)
        decision(run_hook(raw, hook_env(Path(root))))  # asserts exit 0 and the stdout shape
