"""A FIFO, a device or a directory where the hook expects a file, or a stdin that never
closes: the hook still answers, quickly, and fails open (never hangs holding the lock)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ralphctl.hook.arming import arm
from ralphctl.hook.lock import LOCK_TIMEOUT_S
from ralphctl.hook.paths import LEGACY_STATE, lock_for
from ralphctl.hook.stopinput import READ_TIMEOUT_S
from tests.hook.helpers import (
    HOOK_FILE,
    OTHER_SESSION,
    SESSION,
    decision,
    hook_env,
    stop_event,
)

#: Well within the lock timeout: a hook that waits on a FIFO would hit this instead.
ANSWER_WITHIN_S = LOCK_TIMEOUT_S


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def run_bounded(
    stdin: bytes, env: dict[str, str]
) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(HOOK_FILE), "stop"],
        input=stdin,
        env=env,
        capture_output=True,
        check=False,
        timeout=ANSWER_WITHIN_S * 2,
    )
    return time.monotonic() - began, done


def replace_with_fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    os.mkfifo(path)


def armed(project: Path) -> Path:
    return Path(arm(str(project), "Fix it", session_id=SESSION, max_iterations=5).path)


def test_a_fifo_tracker_is_refused_and_the_stop_allowed(project):
    replace_with_fifo(armed(project))
    seconds, done = run_bounded(stop_event(), hook_env(project))
    assert decision(done) is None
    assert b"is a FIFO" in done.stderr
    assert seconds < ANSWER_WITHIN_S


def test_a_device_behind_the_tracker_is_refused(project):
    tracker = armed(project)
    tracker.unlink()
    tracker.symlink_to("/dev/zero")
    seconds, done = run_bounded(stop_event(), hook_env(project))
    assert decision(done) is None
    assert b"is a character device" in done.stderr
    assert seconds < ANSWER_WITHIN_S


def test_a_fifo_transcript_is_skipped_and_the_loop_goes_on(project, tmp_path):
    armed(project)
    transcript = tmp_path / "transcript.jsonl"
    os.mkfifo(transcript)
    event = stop_event(text=None, transcript_path=str(transcript))  # an old CLI: no final text
    seconds, done = run_bounded(event, hook_env(project))
    printed = decision(done)
    assert printed is not None
    assert printed["decision"] == "block"
    assert seconds < ANSWER_WITHIN_S


def test_a_fifo_pending_tracker_is_ignored(project):
    replace_with_fifo(project / ".ralph" / "pending" / "0123abcd.md")
    seconds, done = run_bounded(stop_event(), hook_env(project))
    assert decision(done) is None
    assert b"is a FIFO" in done.stderr
    assert seconds < ANSWER_WITHIN_S


def test_a_fifo_hook_log_is_not_written_and_the_warning_still_reaches_stderr(project):
    armed(project).write_text("not a tracker")
    replace_with_fifo(project / ".ralph" / "hook.log")
    seconds, done = run_bounded(stop_event(), hook_env(project))
    assert decision(done) is None
    assert b"ralphctl hook:" in done.stderr
    assert seconds < ANSWER_WITHIN_S


def test_a_fifo_lock_file_is_refused(project):
    replace_with_fifo(Path(lock_for(str(armed(project)))))
    seconds, done = run_bounded(stop_event(), hook_env(project))
    assert decision(done) is None
    assert b"is a FIFO" in done.stderr
    assert seconds < ANSWER_WITHIN_S


def test_a_fifo_official_plugin_state_is_refused(project):
    replace_with_fifo(project / LEGACY_STATE)
    seconds, done = run_bounded(stop_event(session=OTHER_SESSION), hook_env(project, None))
    assert decision(done) is None
    assert b"is a FIFO" in done.stderr
    assert seconds < ANSWER_WITHIN_S


def test_a_directory_where_the_tracker_should_be_is_refused(project):
    tracker = armed(project)
    tracker.unlink()
    tracker.mkdir()
    _, done = run_bounded(stop_event(), hook_env(project))
    assert decision(done) is None
    assert b"is a directory" in done.stderr


def never_closed(stdin: bytes, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """The hook fed ``stdin`` through a pipe whose write end stays open throughout."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, stdin)
        hook = subprocess.Popen(
            [sys.executable, "-I", "-S", str(HOOK_FILE), "stop"],
            stdin=read_end,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        stdout, stderr = hook.communicate(timeout=READ_TIMEOUT_S + ANSWER_WITHIN_S)
    finally:
        os.close(read_end)
        os.close(write_end)
    return subprocess.CompletedProcess(hook.args, hook.returncode, stdout, stderr)


def test_a_stdin_that_never_closes_is_read_until_its_deadline(project):
    armed(project)
    began = time.monotonic()
    done = never_closed(stop_event(), hook_env(project))
    assert done.returncode == 0
    assert b"stdin was not closed" in done.stderr
    assert b'"decision": "block"' in done.stdout  # the whole event had arrived: decided
    assert time.monotonic() - began < READ_TIMEOUT_S + ANSWER_WITHIN_S


def test_a_stdin_that_sends_nothing_and_never_closes_is_allowed(project):
    armed(project)
    done = never_closed(b"", hook_env(project))
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"stdin is empty" in done.stderr
