"""Steering a fresh-context loop, end to end with the scripted agent: a message reaches the
next prompt exactly once, and a question can pause the loop until it is answered."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ralphctl.domain.states import LoopStatus
from ralphctl.domain.steering import HEADING, NO_HUMAN_NOTE
from ralphctl.engine.steering import messages_json, pending_messages, tell
from ralphctl.store.repository import Store
from tests.engine.test_guards import prompts
from tests.engine.test_runner import DONE, Recorder, new_loop, run

QUESTION = "Should I use PostgreSQL or SQLite for this?"


def saving(path: Path, *steps: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**step, "save_prompt": str(path)} for step in steps]


def test_a_message_told_while_an_iteration_runs_reaches_the_next_prompt_exactly_once(
    db: Store, workdir: Path
):
    saved = workdir.parent / "prompts.txt"
    loop, config = new_loop(db, workdir, [])
    database = str(workdir.parent / "ralphctl.db")
    tell_cli = [sys.executable, "-m", "ralphctl", "tell", loop.id, "Use tabs, not spaces."]
    telling = shlex.join([*tell_cli, "--db", database])
    steps = saving(saved, {"text": "Working.", "bash": [telling]}, {"text": "Ok."}, {"text": DONE})
    Path(str(config.script)).write_text(json.dumps({"steps": steps}))

    final = run(db, loop, config)

    assert final.status is LoopStatus.COMPLETED
    first, second, third = prompts(saved)
    assert "Use tabs, not spaces." not in first
    assert HEADING in second
    assert "- Use tabs, not spaces." in second
    assert "Use tabs, not spaces." not in third
    [told] = messages_json(db, loop.id)
    assert (told["delivered"], told["iteration"]) == (True, 2)
    starts = [e for e in db.events_since(0, loop.id) if e.event_type == "iteration_started"]
    assert [e.data.get("messages") for e in starts] == [None, [told["seq"]], None]


def test_a_message_told_during_the_cooldown_reaches_the_next_prompt(db: Store, workdir: Path):
    """The next prompt's messages are read while git looks at the files (engine/runner); a
    message told after that read, while the loop cools down, is not left for later."""
    for args in (["init", "-q"], ["config", "user.name", "t"], ["config", "user.email", "t@x"]):
        subprocess.run(["git", *args], cwd=workdir, check=True)
    saved = workdir.parent / "prompts.txt"
    loop, config = new_loop(db, workdir, [], cooldown=2)
    database = str(workdir.parent / "ralphctl.db")
    tell_cli = [sys.executable, "-m", "ralphctl", "tell", loop.id, "Use tabs.", "--db", database]
    # in a session of its own (the agent's group is killed as it exits): lands after the exit
    later = f"setsid {shlex.join(tell_cli)} > /dev/null 2>&1 &"
    steps = saving(saved, {"text": "Working.", "bash": [later]}, {"text": DONE})
    Path(str(config.script)).write_text(json.dumps({"steps": steps}))

    final = run(db, loop, config)

    assert final.status is LoopStatus.COMPLETED
    first, second = prompts(saved)
    assert "Use tabs." not in first
    assert "- Use tabs." in second
    events = db.events_since(0, loop.id)
    [completed] = [e.seq for e in events if e.event_type == "iteration_completed"][:1]
    [told] = [e.seq for e in events if e.event_type == "message"]
    assert told > completed  # told after the first iteration was recorded


def test_messages_told_to_a_paused_loop_open_its_next_prompt_after_resume(db: Store, workdir: Path):
    saved = workdir.parent / "prompts.txt"
    loop, config = new_loop(db, workdir, saving(saved, {"text": DONE}))
    tell(db, loop, "First this.", "ana")
    tell(db, loop, "Then that.", "bo")

    run(db, loop, config)

    [prompt] = prompts(saved)
    assert prompt.index("- First this.") < prompt.index("- Then that.")
    assert pending_messages(db, loop.id) == []


def test_a_question_with_on_question_wait_pauses_until_tell_answers_it(db: Store, workdir: Path):
    saved = workdir.parent / "prompts.txt"
    steps = saving(saved, {"text": QUESTION}, {"text": DONE})
    loop, config = new_loop(db, workdir, steps, on_question="wait", question_timeout=60)
    answered: list[float] = []

    def answer_when_paused() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            waiting = db.get_loop(loop.id)
            if waiting.status is LoopStatus.PAUSED:
                assert QUESTION in (waiting.stop_detail or "")
                tell(db, waiting, "SQLite.", "ana")
                answered.append(time.monotonic())
                return
            time.sleep(0.05)

    helper = threading.Thread(target=answer_when_paused)
    helper.start()
    observer = Recorder()
    final = run(db, loop, config, observer=observer)
    helper.join()

    assert final.status is LoopStatus.COMPLETED
    assert answered, "the loop never paused on the question"
    _, second = prompts(saved)
    assert "- SQLite." in second
    assert NO_HUMAN_NOTE not in second
    types = observer.types()
    assert types.index("question") < types.index("waiting")
    question = next(e for e in observer.events if e.event_type == "question")
    assert question.data == {"iteration": 1, "question": QUESTION, "on_question": "wait"}


def test_an_unanswered_question_times_out_and_the_agent_chooses_a_safe_default(
    db: Store, workdir: Path
):
    saved = workdir.parent / "prompts.txt"
    steps = saving(saved, {"text": QUESTION}, {"text": DONE})
    loop, config = new_loop(db, workdir, steps, on_question="wait", question_timeout=1)
    observer = Recorder()

    started = time.monotonic()
    final = run(db, loop, config, observer=observer)

    assert final.status is LoopStatus.COMPLETED
    assert time.monotonic() - started >= 1
    assert NO_HUMAN_NOTE in prompts(saved)[1]
    warnings = [e.data["message"] for e in observer.events if e.event_type == "warning"]
    assert any("no answer" in message for message in warnings)


def test_with_on_question_continue_a_question_is_an_event_and_the_loop_goes_on(
    db: Store, workdir: Path
):
    loop, config = new_loop(db, workdir, [{"text": QUESTION}, {"text": DONE}])
    observer = Recorder()

    final = run(db, loop, config, observer=observer)

    assert final.status is LoopStatus.COMPLETED
    assert "question" in observer.types()
    assert "waiting" not in observer.types()


def test_a_stop_request_ends_a_loop_waiting_for_an_answer(db: Store, workdir: Path):
    loop, config = new_loop(
        db, workdir, [{"text": QUESTION}], on_question="wait", question_timeout=60
    )

    def stop_when_paused() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if db.get_loop(loop.id).status is LoopStatus.PAUSED:
                (workdir / ".ralph" / "stop").touch()
                return
            time.sleep(0.05)

    helper = threading.Thread(target=stop_when_paused)
    helper.start()
    final = run(db, loop, config)
    helper.join()

    assert final.status is LoopStatus.STOPPED
