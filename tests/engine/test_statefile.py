import asyncio
import json
import os
import threading
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from ralphctl.domain.states import LoopStatus
from ralphctl.engine import statefile
from ralphctl.engine.statefile import (
    StateWriter,
    check_state_file,
    ralph_dir,
    render_state,
    state_path,
    write_state,
)
from ralphctl.store.records import IterationRecord, LoopRecord

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
LOOP = LoopRecord(
    id="abc123def456",
    name="demo",
    mode="fresh",
    agent="scripted",
    workdir="/w",
    task="Do it",
    config={"max_iterations": 10},
    status=LoopStatus.RUNNING,
    created_at=NOW,
    started_at=NOW,
    iteration=1,
)
ITERATION = IterationRecord(
    loop_id=LOOP.id,
    n=1,
    started_at=NOW,
    completed_at=NOW,
    status="ok",
    output_summary="wrote a.py",
    completion_signal_found=False,
)


def test_the_state_document_has_the_seed_fields():
    document = render_state(LOOP, [ITERATION])
    assert document["version"] == 1
    assert document["task"] == "Do it"
    assert document["iteration"] == 1
    assert document["maxIterations"] == 10
    assert document["status"] == "running"
    assert document["startedAt"] == NOW.isoformat()
    assert document["history"] == [
        {
            "iteration": 1,
            "startedAt": NOW.isoformat(),
            "completedAt": NOW.isoformat(),
            "status": "ok",
            "outputSummary": "wrote a.py",
            "markerFound": False,
        }
    ]


def test_writing_is_atomic_and_leaves_no_temp_files(tmp_path):
    write_state(tmp_path, render_state(LOOP, [ITERATION]))
    write_state(tmp_path, render_state(LOOP, []))
    assert json.loads(state_path(tmp_path).read_text())["history"] == []
    assert sorted(os.listdir(tmp_path / ".ralph")) == [".gitignore", "state.json"]


def test_the_ralph_dir_ignores_itself_in_git(tmp_path):
    assert (ralph_dir(tmp_path) / ".gitignore").read_text().splitlines()[-1] == "*"


@pytest.mark.parametrize(
    "content", [b"{not json", b"\x00\xff garbage", b"[1, 2]", b'{"version": 99}']
)
def test_a_corrupt_state_file_is_reported_not_fatal(tmp_path, content):
    ralph_dir(tmp_path)
    state_path(tmp_path).write_bytes(content)
    problem = check_state_file(tmp_path)
    assert problem is not None
    assert "rebuilt from the database" in problem


def test_a_missing_or_valid_state_file_is_fine(tmp_path):
    assert check_state_file(tmp_path) is None
    write_state(tmp_path, render_state(LOOP, []))
    assert check_state_file(tmp_path) is None


def test_a_failed_write_keeps_the_previous_file(tmp_path, monkeypatch):
    write_state(tmp_path, render_state(LOOP, [ITERATION]))

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_state(tmp_path, render_state(LOOP, []))
    assert len(json.loads(state_path(tmp_path).read_text())["history"]) == 1
    assert sorted(os.listdir(tmp_path / ".ralph")) == [".gitignore", "state.json"]


def test_the_writer_writes_in_a_worker_thread_and_the_newest_document_wins(tmp_path, monkeypatch):
    written: list[tuple[int, bool]] = []

    def recording(workdir, document):
        written.append((document["iteration"], threading.current_thread() is main))
        write_state(workdir, document)

    main = threading.current_thread()
    problems: list[OSError] = []
    monkeypatch.setattr(statefile, "write_state", recording)

    async def scenario() -> None:
        writer = StateWriter(tmp_path, problems.append)
        for n in range(1, 4):  # submitted while none is written yet: only the last one is
            writer.submit(replace(LOOP, iteration=n), [])
        await writer.flush()
        writer.submit(replace(LOOP, iteration=4), [])
        await writer.flush()

    asyncio.run(scenario())
    assert problems == []
    assert written == [(3, False), (4, False)]
    assert json.loads(state_path(tmp_path).read_text())["iteration"] == 4


def test_a_write_the_writer_cannot_do_is_reported_to_its_owner(tmp_path):
    (tmp_path / ".ralph").write_text("a file where the directory should be")
    problems: list[OSError] = []

    async def scenario() -> None:
        writer = StateWriter(tmp_path, problems.append)
        writer.submit(LOOP, [])
        await writer.flush()

    asyncio.run(scenario())
    assert len(problems) == 1
    assert isinstance(problems[0], FileExistsError)


def test_the_state_file_lists_the_newest_iterations_and_counts_the_older_ones():
    iterations = [replace(ITERATION, n=n) for n in range(1, statefile.STATE_HISTORY + 8)]
    document = render_state(replace(LOOP, iteration=len(iterations)), iterations)
    assert document["historyOmitted"] == 7
    listed = [entry["iteration"] for entry in document["history"]]
    assert listed == list(range(8, statefile.STATE_HISTORY + 8))
    assert render_state(LOOP, [ITERATION])["historyOmitted"] == 0


def test_the_writer_renders_the_newest_iterations_off_the_event_loop(tmp_path, monkeypatch):
    rendered: list[bool] = []
    render = statefile.render_state

    def recording(*args, **kwargs):
        rendered.append(threading.current_thread() is threading.main_thread())
        return render(*args, **kwargs)

    monkeypatch.setattr(statefile, "render_state", recording)
    iterations = [replace(ITERATION, n=n) for n in range(1, statefile.STATE_HISTORY + 8)]
    problems: list[OSError] = []

    async def scenario() -> None:
        writer = StateWriter(tmp_path, problems.append)
        writer.submit(replace(LOOP, iteration=len(iterations)), iterations)
        await writer.flush()

    asyncio.run(scenario())
    assert (rendered, problems) == ([False], [])
    written = json.loads(state_path(tmp_path).read_text())
    assert written["historyOmitted"] == 7
    assert written["history"][0]["iteration"] == 8
