"""The Stop hook under a ``--mode hook`` runner: it prints the runner's answer, and decides
locally from the tracker when the runner cannot answer; it never hangs."""

from __future__ import annotations

import io
import json
import os
import re
import sys
from pathlib import Path

import pytest

from ralphctl.hook import forwarder, handler
from ralphctl.hook.arming import arm
from ralphctl.hook.handler import SOCKET_ENV
from ralphctl.store.repository import Store
from tests.hook.helpers import (
    SESSION,
    answer,
    decision,
    fields_of,
    hook_env,
    run_hook,
    session_tracker,
    stop_event,
)
from tests.hookmode.runners import answering, fake_runner, not_ours, saying, silent

RUNNERS_BLOCK = json.dumps({"decision": "block", "reason": "The runner says: keep going."})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    arm(str(path), "Fix the flaky tests", session_id=SESSION, max_iterations=3)
    return path


def forwarding_env(project: Path, socket_path: Path, db: Path | None = None) -> dict[str, str]:
    history = {"RALPHCTL_HOOK_STORE": "inline", "RALPHCTL_DB": str(db)} if db else {}
    return hook_env(project, **{SOCKET_ENV: str(socket_path)}, **history)


def test_the_runners_answer_is_printed_and_the_hook_leaves_the_tracker_alone(project, sockets):
    with fake_runner(sockets / "stop.sock", answering(RUNNERS_BLOCK)) as runner:
        done = run_hook(stop_event(), forwarding_env(project, runner.path))
    assert decision(done) == json.loads(RUNNERS_BLOCK)
    assert done.stderr == b""
    assert fields_of(session_tracker(project))["iteration"] == 1
    [(header, raw)] = runner.requests
    assert raw == stop_event()
    assert header["session_id"] == SESSION


def test_the_fast_hook_command_forwards_too(project, sockets):
    hook_file = str(Path(handler.__file__).with_name("__main__.py"))
    fast = [sys.executable, "-I", "-S", hook_file, "stop"]
    with fake_runner(sockets / "stop.sock", answering(RUNNERS_BLOCK)) as runner:
        done = run_hook(stop_event(), forwarding_env(project, runner.path), command=fast)
    assert decision(done) == json.loads(RUNNERS_BLOCK)


def test_a_stop_that_is_not_the_runners_is_decided_and_recorded_as_a_standalone_hook(
    project, sockets, tmp_path
):
    db = tmp_path / "history.db"
    with fake_runner(sockets / "stop.sock", not_ours()) as runner:
        done = run_hook(stop_event(), forwarding_env(project, runner.path, db))
    assert answer(done)["decision"] == "block"
    assert fields_of(session_tracker(project))["iteration"] == 2
    with Store.open(str(db)) as store:
        assert [loop.mode for loop in store.list_loops()] == ["hook"]


def test_without_the_runners_socket_the_hook_decides_locally_and_leaves_history_to_it(
    project, sockets, tmp_path
):
    db = tmp_path / "history.db"
    done = run_hook(stop_event(), forwarding_env(project, sockets / "gone.sock", db))
    printed = answer(done)
    assert printed["decision"] == "block"
    assert printed["systemMessage"] == "Ralph iteration 2/3"
    assert fields_of(session_tracker(project))["iteration"] == 2
    [warning] = done.stderr.decode().splitlines()
    assert re.fullmatch(
        r"ralphctl hook: no answer from the ralphctl runner \(.*\): deciding locally", warning
    )
    assert not db.exists()


def test_a_garbage_answer_means_a_local_decision(project, sockets):
    with fake_runner(sockets / "stop.sock", saying(b"HTTP/1.1 200 OK\r\n\r\n")) as runner:
        done = run_hook(stop_event(), forwarding_env(project, runner.path))
    assert answer(done)["decision"] == "block"
    assert fields_of(session_tracker(project))["iteration"] == 2


def test_a_runner_that_accepts_and_never_answers_cannot_hang_the_hook(
    project, sockets, monkeypatch, capsys, tmp_path
):
    monkeypatch.setattr(forwarder, "TIMEOUT_S", 0.3)
    event = tmp_path / "stop.json"
    event.write_bytes(stop_event())
    with fake_runner(sockets / "stop.sock", silent()) as runner, event.open("rb") as stdin:
        env = forwarding_env(project, runner.path)
        monkeypatch.setattr(os, "environ", env)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stdin))
        assert handler.main([]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["decision"] == "block"
    assert "no answer within 0.3 s" in err
    assert fields_of(session_tracker(project))["iteration"] == 2


def test_with_no_runner_and_no_loop_the_hook_still_passes_the_stop_through(tmp_path, sockets):
    done = run_hook(stop_event(), forwarding_env(tmp_path, sockets / "gone.sock"))
    assert decision(done) is None
