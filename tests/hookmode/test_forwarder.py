"""The hook's side of the runner socket: the protocol, and every way it falls back."""

from __future__ import annotations

import json
import time

import pytest

from ralphctl.hook import forwarder
from ralphctl.hook.forwarder import Answer, ForwardError, forward, parse_answer
from tests.hook.helpers import SESSION, stop_event
from tests.hookmode.runners import answering, fake_runner, not_ours, saying, silent

BLOCK = json.dumps({"decision": "block", "reason": "Keep going."})
ENV = {"CLAUDE_CODE_SESSION_ID": SESSION}


def test_the_stop_goes_to_the_runner_as_a_header_line_and_the_raw_input(sockets):
    with fake_runner(sockets / "stop.sock", answering(BLOCK)) as runner:
        answer = forward(str(runner.path), stop_event(), ["--format", "claude"], ENV)
    assert (answer.decided, answer.line) == (True, BLOCK)
    [(header, raw)] = runner.requests
    assert raw == stop_event()
    assert header["v"] == 1
    assert header["argv"] == ["--format", "claude"]
    assert header["session_id"] == SESSION
    assert isinstance(header["deadline"], float)


def test_the_runner_may_decide_that_nothing_is_printed(sockets):
    with fake_runner(sockets / "stop.sock", answering(None)) as runner:
        assert forward(str(runner.path), stop_event(), [], ENV).line is None


def test_the_runner_may_say_the_stop_is_not_its_own(sockets):
    with fake_runner(sockets / "stop.sock", not_ours()) as runner:
        assert forward(str(runner.path), stop_event(), [], ENV).decided is False


def test_a_socket_that_does_not_exist_is_an_error_at_once(sockets):
    with pytest.raises(ForwardError, match="No such file"):
        forward(str(sockets / "missing.sock"), stop_event(), [], ENV)


def test_a_runner_that_never_answers_is_given_up_on(sockets):
    with (
        fake_runner(sockets / "stop.sock", silent()) as runner,
        pytest.raises(ForwardError, match=r"no answer within 0\.2 s"),
    ):
        forward(str(runner.path), stop_event(), [], ENV, timeout=0.2)


def test_the_runner_is_told_to_give_up_at_half_the_hooks_patience(sockets, monkeypatch):
    monkeypatch.setattr(time, "monotonic", lambda: 100.0)
    with fake_runner(sockets / "stop.sock", answering(None)) as runner:
        forward(str(runner.path), stop_event(), [], ENV, timeout=1.0)
    [(header, _)] = runner.requests
    assert header["deadline"] == 100.5


@pytest.mark.parametrize(
    "garbage",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'{"v": 2, "decided": true, "line": null}',
        b'{"v": 1, "decided": "yes"}',
        b'{"v": 1, "decided": true, "line": "Keep going."}',
        b'{"v": 1, "decided": true, "line": "{\\"a\\": 1}\\n{\\"b\\": 2}"}',
        b'{"v": 1, "decided": true, "line": "[1]"}',
        b'{"v": 1, "decided": true}',
    ],
    ids=[
        "nothing",
        "not-json",
        "not-an-object",
        "other-version",
        "decided-not-a-bool",
        "line-not-json",
        "two-lines",
        "line-not-an-object",
        "line-missing",
    ],
)
def test_a_garbage_answer_is_refused_so_nothing_but_one_object_is_ever_printed(sockets, garbage):
    with (
        fake_runner(sockets / "stop.sock", saying(garbage)) as runner,
        pytest.raises(ForwardError),
    ):
        forward(str(runner.path), stop_event(), [], ENV)


def test_an_oversized_answer_is_refused(sockets, monkeypatch):
    monkeypatch.setattr(forwarder, "MAX_ANSWER_BYTES", 100)
    answer = json.dumps({"v": 1, "decided": True, "line": json.dumps({"x": "y" * 200})})
    with (
        fake_runner(sockets / "stop.sock", saying(answer.encode())) as runner,
        pytest.raises(ForwardError, match="larger than 100 bytes"),
    ):
        forward(str(runner.path), stop_event(), [], ENV)


def test_answers_parse_to_what_the_hook_prints():
    assert repr(parse_answer(b'{"v": 1, "decided": true, "line": "{}"}')) == repr(
        Answer(True, "{}")
    )
    assert parse_answer(b'{"v": 1, "decided": false, "line": "ignored"}').line is None
