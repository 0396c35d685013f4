"""A standalone Stop hook's history warns of a budget 80 % spent, as a runner's loop does."""

from __future__ import annotations

import time
from pathlib import Path

from ralphctl.hook.arming import arm
from ralphctl.hook.handler import respond
from ralphctl.hook.record import StopRecord
from ralphctl.hook.storewriter import write
from ralphctl.store.repository import Store
from tests.hook.helpers import SESSION, fields_of, hook_env, stop_event


def stop(project: Path, store: Store, text: str) -> StopRecord:
    _, record = respond(stop_event(text=text), [], hook_env(project), time.time())
    assert record is not None
    write(store, record)
    return record


def warnings(store: Store, loop_id: str) -> list[tuple[str, int]]:
    said = store.events_of(loop_id, ["budget_warning"])
    return [(event.data["budget"], event.data["iteration"]) for event in said]


def test_the_iteration_that_reaches_80_percent_of_the_bound_warns_once(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    armed = arm(str(project), "Fix the tests", session_id=SESSION, max_iterations=5)
    loop_id = str(fields_of(Path(armed.path))["loop_id"])
    with Store.open(str(tmp_path / "history.db")) as store:
        records = [stop(project, store, f"Working ({n}).") for n in range(1, 6)]
        for record in records:  # stored again (a writer after a crash): said once all the same
            write(store, record)

        assert warnings(store, loop_id) == [("iterations", 4)]
        [event] = store.events_of(loop_id, ["budget_warning"])
        assert (event.data["used"], event.data["limit"], event.data["fraction"]) == (4, 5, 0.8)


def test_a_runtime_bound_mostly_spent_warns_of_the_runtime(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    armed = arm(str(project), "Fix the tests", session_id=SESSION, max_runtime_s=10)
    loop_id = str(fields_of(Path(armed.path))["loop_id"])
    with Store.open(str(tmp_path / "history.db")) as store:
        record = stop(project, store, "Working.")
        late = StopRecord.from_json(
            record.to_json() | {"iteration": 2, "ended_at": record.loop_started_at + 9}
        )
        write(store, late)

        assert warnings(store, loop_id) == [("runtime", 2)]
