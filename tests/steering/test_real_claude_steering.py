"""Steering the REAL Claude Code CLI against the mock Messages API: a message told while the
first iteration runs reaches the model in the next one, in both loop modes; a hook-mode loop
with ``on_question = wait`` waits for the message that answers its question.

The mock tells the loop (``engine.steering.tell``, as ``ralphctl tell`` does) while it answers
the first request, so the message is in flight exactly while an iteration runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ralphctl.domain.steering import HEADING
from ralphctl.engine.steering import messages_json, tell
from ralphctl.store.records import LoopRecord
from ralphctl.store.repository import Store
from tests.mockapi import Reply
from tests.mockapi.recorded import RecordedRequest
from tests.mockapi.turns import Answer, Responder
from tests.realcli.harness import RealClaude

pytestmark = pytest.mark.real_cli

MESSAGE = "Write the notes in French, please."
DONE = "Done.\n<promise>COMPLETE</promise>"


def database(real_claude: RealClaude) -> Path:
    return real_claude.home / "ralphctl.db"


def ralphctl(real_claude: RealClaude, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **real_claude.env,
        "RALPHCTL_DB": str(database(real_claude)),
        "RALPHCTL_CONFIG": "/nonexistent.toml",
    }
    return subprocess.run(
        [sys.executable, "-m", "ralphctl", *args],
        env=env,
        cwd=real_claude.project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def telling(real_claude: RealClaude, answer: Answer) -> Responder:
    """A turn that tells the (only) loop ``MESSAGE`` before it answers."""

    def respond(_request: RecordedRequest) -> Answer:
        with Store.open(str(database(real_claude))) as store:
            tell(store, the_loop(store), MESSAGE, "test")
        return answer

    return respond


def the_loop(store: Store) -> LoopRecord:
    """The only loop, once stored: a new loop is stored while its first agent starts, so under
    load the agent's first request can come first."""
    deadline = time.monotonic() + 30
    while not (loops := store.list_loops()) and time.monotonic() < deadline:
        time.sleep(0.05)
    [loop] = loops
    return loop


def user_texts(real_claude: RealClaude) -> list[list[str]]:
    return [request.user_texts() for request in real_claude.server.main_requests]


def delivered(real_claude: RealClaude, loop_id: str) -> list[tuple[bool, int | None]]:
    with Store.open(str(database(real_claude))) as store:
        return [(m["delivered"], m["iteration"]) for m in messages_json(store, loop_id)]


def test_a_fresh_loop_puts_the_message_in_the_next_iterations_prompt(real_claude: RealClaude):
    real_claude.server.set_script(telling(real_claude, Reply("Started the notes.")), Reply(DONE))

    done = ralphctl(real_claude, "run", "--task", "Write the notes.", "--cooldown", "0", "--json")

    assert done.returncode == 0, done.stderr
    first, second = user_texts(real_claude)
    assert MESSAGE not in json.dumps(first)
    assert HEADING in second[-1]
    assert f"- {MESSAGE}" in second[-1]
    assert delivered(real_claude, json.loads(done.stdout)["loop_id"]) == [(True, 2)]


def test_a_hook_mode_loop_puts_the_message_in_the_next_continue_message(
    real_claude: RealClaude,
):
    real_claude.server.set_script(telling(real_claude, Reply("Started the notes.")), Reply(DONE))

    done = ralphctl(real_claude, "run", "--mode", "hook", "--task", "Write the notes.", "--json")

    assert done.returncode == 0, done.stderr
    _, second = user_texts(real_claude)
    feedback = second[-1]
    assert feedback.startswith("Stop hook feedback:\n")
    assert HEADING in feedback
    assert f"- {MESSAGE}" in feedback
    assert delivered(real_claude, json.loads(done.stdout)["loop_id"]) == [(True, 2)]


def test_a_hook_mode_question_waits_for_the_answer_and_the_session_goes_on_with_it(
    real_claude: RealClaude,
):
    question = "Which database should I use, Postgres or SQLite?"
    real_claude.server.set_script(Reply(question), Reply(DONE))
    told = threading.Thread(target=tell_once_waiting, args=(real_claude,), daemon=True)
    told.start()

    done = ralphctl(
        real_claude,
        "run",
        "--mode",
        "hook",
        "--task",
        "Pick one.",
        "--on-question",
        "wait",
        "--json",
    )

    assert done.returncode == 0, done.stderr
    loop_id = json.loads(done.stdout)["loop_id"]
    with Store.open(str(database(real_claude))) as store:
        events = store.events_since(0, loop_id)
    asked = [e.data for e in events if e.event_type == "question"]
    assert asked == [{"iteration": 1, "question": question, "on_question": "wait"}]
    assert [e.data["reason"] for e in events if e.event_type == "waiting"] == ["question"]
    _, resumed = user_texts(real_claude)
    assert "Pick one." in json.dumps(resumed[:-1])  # the same session, resumed
    assert HEADING in resumed[-1]
    assert f"- {MESSAGE}" in resumed[-1]
    assert delivered(real_claude, loop_id) == [(True, 2)]


def tell_once_waiting(real_claude: RealClaude) -> None:
    """Tell the loop ``MESSAGE`` once it waits for an answer (within 60 s)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.1)
        if not database(real_claude).exists():
            continue
        with Store.open(str(database(real_claude))) as store:
            loops = store.list_loops()
            if loops and "for an answer" in (loops[0].stop_detail or ""):
                tell(store, loops[0], MESSAGE, "test")
                return
