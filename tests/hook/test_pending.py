"""A loop armed before its session id is known: claimed by its session's first Stop, once."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from ralphctl.hook.arming import arm
from ralphctl.hook.clock import iso
from ralphctl.hook.locate import claim_pending
from ralphctl.hook.paths import pending_dir
from tests.hook.helpers import (
    OTHER_SESSION,
    SESSION,
    answer,
    decision,
    edit_fields,
    fields_of,
    hook_env,
    run_hook,
    session_tracker,
    stop_event,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def transcript_with(tmp_path: Path, name: str, text: str, moment: str | None = None) -> Path:
    """A one-line transcript, written now (after any arming) unless ``moment`` says."""
    path = tmp_path / f"{name}.jsonl"
    stamp = moment or iso(time.time() + 10)
    line = {"type": "user", "timestamp": stamp, "message": {"role": "user", "content": text}}
    path.write_text(json.dumps(line) + "\n")
    return path


def test_the_arming_session_claims_its_pending_loop(project, tmp_path):
    armed = arm(str(project), "Fix it", max_iterations=4)
    assert Path(armed.path).parent == Path(pending_dir(str(project)))
    assert armed.token in armed.confirmation()
    mine = transcript_with(tmp_path, "mine", armed.confirmation())
    event = stop_event(transcript_path=str(mine))
    printed = decision(run_hook(event, hook_env(project, session=None)))
    assert printed is not None
    assert printed["systemMessage"] == "Ralph iteration 2/4"
    claimed = fields_of(session_tracker(project))
    assert claimed["session_id"] == SESSION
    assert claimed["iteration"] == 2
    assert not os.listdir(pending_dir(str(project)))


def test_another_session_whose_transcript_lacks_the_token_does_not_claim_it(project, tmp_path):
    armed = arm(str(project), "Fix it")
    theirs = transcript_with(tmp_path, "theirs", "something else entirely")
    event = stop_event(OTHER_SESSION, transcript_path=str(theirs))
    assert decision(run_hook(event, hook_env(project, session=None))) is None
    assert Path(armed.path).exists()
    assert not session_tracker(project, OTHER_SESSION).exists()


def test_a_transcript_lagging_behind_the_arming_does_not_prevent_the_claim(project, tmp_path):
    arm(str(project), "Fix it")
    lagging = transcript_with(tmp_path, "lagging", "before the arming", iso(time.time() - 60))
    event = stop_event(transcript_path=str(lagging))
    assert answer(run_hook(event, hook_env(project, session=None)))["decision"] == "block"


def test_without_a_readable_transcript_the_first_stopping_session_claims_it(project):
    arm(str(project), "Fix it")
    event = stop_event(transcript_path="/nonexistent.jsonl")
    assert answer(run_hook(event, hook_env(project, session=None)))["decision"] == "block"
    assert session_tracker(project).exists()


def test_a_pending_loop_is_claimed_exactly_once(project):
    armed = arm(str(project), "Fix it")
    now = time.time()
    first = claim_pending(str(project), SESSION, None, now)
    second = claim_pending(str(project), OTHER_SESSION, None, now)
    assert first is not None
    assert second is None
    assert fields_of(Path(first))["arm_token"] == armed.token


def test_many_sessions_racing_for_one_pending_loop_yield_one_owner(project):
    from concurrent.futures import ProcessPoolExecutor

    arm(str(project), "Fix it")
    sessions = [f"session-{n:02d}" for n in range(12)]
    with ProcessPoolExecutor(4) as pool:
        results = list(
            pool.map(claim_pending, [str(project)] * 12, sessions, [None] * 12, [time.time()] * 12)
        )
    assert len([r for r in results if r]) == 1


def test_an_expired_pending_loop_is_removed_not_claimed(project):
    armed = arm(str(project), "Fix it", max_runtime_s=60.0)
    edit_fields(Path(armed.path), started_at="2020-01-01T00:00:00Z")
    event = stop_event(transcript_path="/nonexistent.jsonl")
    done = run_hook(event, hook_env(project, session=None))
    assert decision(done) is None
    assert b"expired" in done.stderr
    assert not Path(armed.path).exists()
    assert not session_tracker(project).exists()


def test_claiming_keeps_the_sessions_finished_tracker(project):
    first = arm(str(project), "first loop", session_id=SESSION)
    edit_fields(Path(first.path), active=False)
    arm(str(project), "second loop")
    assert claim_pending(str(project), SESSION, None, time.time())
    assert fields_of(session_tracker(project))["task"] == "second loop"
    kept = session_tracker(project).with_name("loop-tracker.1.md")
    assert fields_of(kept)["task"] == "first loop"
