"""The history queue: one writer per project, records stored once each, whatever is left
behind by a writer that died or by a Stop killed mid-write."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ralphctl.hook import spool
from ralphctl.hook.arming import arm
from ralphctl.hook.handler import respond
from ralphctl.hook.jsonio import dumps
from ralphctl.hook.record import StopRecord
from ralphctl.hook.storewriter import drain
from ralphctl.store.repository import Store
from tests.hook.helpers import SESSION, hook_env, stop_event


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    arm(str(path), "Fix the tests", session_id=SESSION, max_iterations=10)
    return path


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "history.db")


def queued_stop(project: Path, db: str) -> StopRecord:
    """One Stop decided, its record queued as the hook queues it."""
    _, record = respond(stop_event(), [], hook_env(project), time.time())
    assert record is not None
    spool.queue(str(project), dumps({"db": db, "record": record.to_json()}))
    return record


def drain_now(project: Path) -> None:
    lock = spool.claim_writer(str(project))
    assert lock is not None
    drain(str(project), lock)


def stored_iterations(db: str) -> list[int]:
    with Store.open(db) as store:
        (loop,) = store.list_loops()
        return [it.n for it in store.iterations(loop.id)]


def test_one_writer_at_a_time_per_project(project):
    first = spool.claim_writer(str(project))
    assert first is not None
    assert spool.claim_writer(str(project)) is None
    os.close(first)
    second = spool.claim_writer(str(project))
    assert second is not None
    os.close(second)


def test_the_writer_stores_every_queued_record_once_and_empties_the_queue(project, db):
    for _ in range(3):
        queued_stop(project, db)
    drain_now(project)
    assert stored_iterations(db) == [1, 2, 3]
    assert spool.queued(str(project)) == []
    lock = spool.claim_writer(str(project))  # released when done
    assert lock is not None
    os.close(lock)


def test_a_record_stored_before_a_writer_died_is_stored_once_when_taken_again(project, db):
    record = queued_stop(project, db)
    (path,) = spool.queued(str(project))
    left_behind = Path(path).read_bytes()
    drain_now(project)
    Path(path).write_bytes(left_behind)  # as if the writer had died before deleting it
    queued_stop(project, db)
    drain_now(project)
    assert stored_iterations(db) == [1, 2]
    assert record.iteration == 1


def test_a_corrupt_queue_file_is_dropped_with_a_warning_and_the_rest_stored(project, db, capfd):
    queue_dir = Path(spool.queue(str(project), "not json")).parent
    queued_stop(project, db)
    (queue_dir / "00000000000000000000-1-bad.json").write_text('{"db": 1, "record": {}}')
    drain_now(project)
    assert stored_iterations(db) == [1]
    assert capfd.readouterr().err.count("history queue: dropping") == 2
    assert spool.queued(str(project)) == []


def test_a_half_written_record_is_swept_once_stale(project):
    queue_dir = Path(spool.queue(str(project), "{}")).parent
    half = queue_dir / ".00000000000000000001-1-dead.json"
    half.write_text('{"db": nu')
    spool.sweep(str(project), time.time())
    assert half.exists()  # it may still be being written
    spool.sweep(str(project), time.time() + spool.STALE_TEMP_S + 1)
    assert not half.exists()


def test_a_record_read_back_is_the_record_written(project, db):
    _, record = respond(stop_event(text="x" * 500), [], hook_env(project), time.time())
    assert record is not None
    again = StopRecord.from_json(record.to_json())
    assert {name: getattr(again, name) for name in StopRecord.__slots__} == {
        name: getattr(record, name) for name in StopRecord.__slots__
    } | {"summary": "x" * 200}


@pytest.mark.parametrize("document", [None, [], "record", {"loop_id": "abc"}])
def test_a_queued_document_that_is_not_a_record_is_refused(document):
    with pytest.raises(ValueError, match="not a Stop record"):
        StopRecord.from_json(document)


@pytest.mark.parametrize(
    ("name", "value"),
    [("iteration", "1"), ("completed", 1), ("config", ["x"]), ("ended_at", None), ("task", 3)],
)
def test_a_record_with_a_field_of_the_wrong_type_is_refused(project, name, value):
    _, record = respond(stop_event(), [], hook_env(project), time.time())
    assert record is not None
    with pytest.raises(TypeError, match=name):
        StopRecord.from_json(record.to_json() | {name: value})
