"""Whatever any agent's hook is fed, it fails open: no block unless a real Stop of the armed
session arrived, one JSON object or nothing on stdout, exit 0, never an exception."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralphctl.hook.arming import arm
from ralphctl.hook.handler import respond
from ralphctl.hook.mapper import FORMATS
from ralphctl.hook.stopinput import StopInputError, parse
from tests.hook.agent_inputs import AGENTS, INSTRUCTION_FIELD, agent_env, agent_stop
from tests.hook.helpers import SESSION, decision, run_hook

relaxed = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=150)
PROJECT = Path("/placeholder")  # replaced by the temp project in each example
#: Every field name any agent sends, so that arbitrary objects hit the normalisers' paths.
FIELD_NAMES = sorted(
    {key for agent in AGENTS for key in json.loads(agent_stop(agent, PROJECT))}
    | {"session_id", "stopHookActive", "hookEventName", "last_assistant_message"}
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


@st.composite
def agent_inputs(draw: st.DrawFn) -> tuple[str, bytes]:
    """An output format and stdin: random bytes, a cut and mangled recorded input (of any
    agent, not only the format's own), or an object of known field names and random values."""
    fmt = draw(st.sampled_from(FORMATS))
    recorded = agent_stop(draw(st.sampled_from(AGENTS)), Path("{project}"))
    mangled = st.builds(
        lambda cut, junk: recorded[:cut] + junk,
        st.integers(0, len(recorded)),
        st.binary(max_size=12),
    )
    objects = st.dictionaries(st.sampled_from(FIELD_NAMES), json_values, max_size=8).map(
        lambda data: json.dumps(data).encode()
    )
    return fmt, draw(st.binary(max_size=300) | mangled | objects | st.just(recorded))


def stdin_only_env(agent: str, project: Path) -> dict[str, str]:
    """The agent's hook environment without Claude Code's session id: the session can only
    come from stdin."""
    env = agent_env(agent, project)
    env.pop("CLAUDE_CODE_SESSION_ID", None)
    return env


def is_real_stop_of_the_session(raw: bytes, fmt: str) -> bool:
    try:
        return parse(raw, fmt).session_id == SESSION
    except StopInputError:
        return False


@relaxed
@given(case=agent_inputs())
def test_any_input_for_any_agent_blocks_only_a_stop_of_the_armed_session(case):
    fmt, raw = case
    with tempfile.TemporaryDirectory() as root:
        project = Path(root)
        arm(root, "Fix it", session_id=SESSION, max_iterations=3)
        raw = raw.replace(b"{project}", json.dumps(root)[1:-1].encode())
        line, _ = respond(raw, ["--format", fmt], stdin_only_env(fmt, project), time.time())
    if line is None:
        return
    printed = json.loads(line)
    assert isinstance(printed, dict)
    assert "\n" not in line
    if INSTRUCTION_FIELD[fmt] in printed:
        assert is_real_stop_of_the_session(raw, fmt)


@relaxed
@given(argv=st.lists(st.sampled_from(["--format", "--loop-limit", "cursor", "x", "-1", "="])))
def test_any_arguments_are_answered_without_an_exception(argv):
    with tempfile.TemporaryDirectory() as root:
        arm(root, "Fix it", session_id=SESSION, max_iterations=3)
        raw = agent_stop("cursor", Path(root))
        line, _ = respond(raw, argv, agent_env("cursor", Path(root)), time.time())
    assert line is None or isinstance(json.loads(line), dict)


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize(
    "stdin", [b"", b"not json", b"[1, 2]", b'{"session_id": ', b"\xff\xfe", b"{}"]
)
def test_the_hook_process_fails_open_for_every_agent(agent, stdin, tmp_path):
    arm(str(tmp_path), "Fix it", session_id=SESSION, max_iterations=3)
    done = run_hook(stdin, stdin_only_env(agent, tmp_path), "--format", agent)
    assert decision(done) is None


@pytest.mark.parametrize("args", [["--format", "xml"], ["--loop-limit", "five"], ["--bogus"]])
def test_bad_arguments_allow_the_stop(args, tmp_path):
    arm(str(tmp_path), "Fix it", session_id=SESSION, max_iterations=3)
    done = run_hook(agent_stop("cursor", tmp_path), agent_env("cursor", tmp_path), *args)
    assert decision(done) is None
    assert b"allowing the stop" in done.stderr
