"""Best-effort history: each Stop of a standalone hook is an iteration of a mode="hook" loop."""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.hook.arming import arm
from ralphctl.hook.control import cancel
from ralphctl.hook.handler import respond
from ralphctl.hook.record import StopRecord, dispatch
from ralphctl.hook.storewriter import write
from ralphctl.store.repository import Store
from tests.hook.helpers import SESSION, answer, fields_of, hook_env, run_hook, stop_event


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "history.db")


def stop(project: Path, db: str, text: str) -> None:
    line, record = respond(stop_event(text=text), [], hook_env(project), time.time())
    assert line is not None
    assert record is not None
    with Store.open(db) as store:
        write(store, record)


def test_each_stop_is_an_iteration_and_the_end_is_the_loops_status(project, db):
    armed = arm(str(project), "Fix the tests", session_id=SESSION, max_iterations=5)
    stop(project, db, "Working on it.")
    stop(project, db, "All green.\n<promise>COMPLETE</promise>")
    loop_id = str(fields_of(Path(armed.path))["loop_id"])
    with Store.open(db) as store:
        loop = store.get_loop(loop_id)
        iterations = store.iterations(loop_id)
        events = [e.event_type for e in store.events_since(0, loop_id)]
    assert (loop.mode, loop.agent, loop.workdir, loop.task) == (
        "hook",
        "claude",
        str(project),
        "Fix the tests",
    )
    assert (loop.status, loop.stop_reason, loop.iteration) == (
        LoopStatus.COMPLETED,
        StopReason.COMPLETION,
        2,
    )
    assert loop.agent_session_id == SESSION
    assert [(i.n, i.status, i.completion_signal_found) for i in iterations] == [
        (1, "ok", False),
        (2, "ok", True),
    ]
    assert iterations[0].output_summary == "Working on it."
    assert events == [
        "iteration_completed",
        "iteration_completed",
        "completion_signal_detected",
        "state_changed",
        "completed",
    ]


def test_a_cancel_ends_the_stored_loop_as_stopped(project, db):
    arm(str(project), "Fix the tests", session_id=SESSION)
    stop(project, db, "Working on it.")
    result = cancel(str(project), SESSION)
    assert result.record is not None
    with Store.open(db) as store:
        write(store, result.record)
    with Store.open(db) as store:
        (loop,) = store.list_loops()
    assert (loop.status, loop.stop_reason) == (LoopStatus.STOPPED, StopReason.USER_STOP)


def test_the_detached_writer_records_after_the_hook_has_answered(project, db):
    armed = arm(str(project), "Fix the tests", session_id=SESSION)
    env = hook_env(project, RALPHCTL_DB=db)
    del env["RALPHCTL_HOOK_STORE"]  # the default: detached
    assert answer(run_hook(stop_event(), env))["decision"] == "block"
    loop_id = str(fields_of(Path(armed.path))["loop_id"])
    deadline = time.monotonic() + 60  # the grandchild imports SQLAlchemy: let it finish
    while time.monotonic() < deadline:
        if Path(db).exists():
            with Store.open(db) as store:
                if store.iterations(loop_id):
                    break
        time.sleep(0.1)
    with Store.open(db) as store:
        assert [i.n for i in store.iterations(loop_id)] == [1]


def test_an_unreachable_store_costs_a_warning_never_the_decision(project, tmp_path):
    arm(str(project), "Fix the tests", session_id=SESSION)
    (tmp_path / "a-file").write_text("not a directory")
    unreachable = str(tmp_path / "a-file" / "x.db")
    env = hook_env(project, RALPHCTL_DB=unreachable, RALPHCTL_HOOK_STORE="inline")
    done = run_hook(stop_event(), env)
    assert answer(done)["decision"] == "block"
    assert "history not recorded" in (project / ".ralph" / "hook.log").read_text()


def test_off_records_nothing(project, db):
    record = StopRecord(
        loop_id="abc123abc123",
        project=str(project),
        agent="claude",
        session_id=SESSION,
        task="t",
        loop_started_at=0.0,
        ended_at=1.0,
        iteration=1,
    )
    dispatch(record, "off")
    assert not Path(db).exists()


def test_overlapping_writers_in_any_order_leave_the_loop_in_the_trackers_state(tmp_path, store_url):
    project = tmp_path / "project"
    project.mkdir()
    armed = Path(arm(str(project), "Count", session_id=SESSION, max_iterations=50).path)
    records = [respond(stop_event(), [], hook_env(project), time.time())[1] for _ in range(50)]
    assert all(record is not None for record in records)
    replayed = random.Random(7).sample(records + records[::5], k=60)  # shuffled, some twice

    def write_alone(record: StopRecord) -> None:
        with Store.open(store_url) as store:
            write(store, record)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write_alone, replayed))

    fields = fields_of(armed)
    assert (fields["iteration"], fields["active"], fields["ended_reason"]) == (
        50,
        False,
        "max_iterations",
    )
    with Store.open(store_url) as store:
        loop = store.get_loop(str(fields["loop_id"]))
        numbers = [it.n for it in store.iterations(loop.id)]
        ends = [e for e in store.events_since(0, loop.id) if e.event_type == "state_changed"]
    assert (loop.iteration, loop.stop_reason) == (50, StopReason.MAX_ITERATIONS)
    assert loop.status is StopReason.MAX_ITERATIONS.status
    assert numbers == list(range(1, 51))
    assert len(ends) == 1


def test_a_late_iteration_never_moves_the_loop_back_nor_reopens_it(project, db):
    arm(str(project), "Fix the tests", session_id=SESSION, max_iterations=3)
    first, second, third = (
        respond(stop_event(), [], hook_env(project), time.time())[1] for _ in range(3)
    )
    assert first is not None
    assert second is not None
    assert third is not None
    with Store.open(db) as store:
        for record in (third, second, first, third):
            write(store, record)
        (loop,) = store.list_loops()
        assert [it.n for it in store.iterations(loop.id)] == [1, 2, 3]
    assert (loop.iteration, loop.status) == (3, LoopStatus.STOPPED)
