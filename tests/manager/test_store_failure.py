"""A hook-mode loop whose database fails under the manager: its session ends with its runner,
so once the database takes writes again the loop is stopped, visibly (error event, reason)."""

from __future__ import annotations

from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.engine import storefailure
from ralphctl.engine.manager import LoopManager
from ralphctl.store.errors import StoreError
from ralphctl.store.records import EventRecord, LoopRecord
from tests.manager.conftest import run, until
from tests.manager.test_hook_loops import hook_spec


def test_a_hook_mode_loop_whose_database_fails_is_stopped_with_the_reason(
    db, new_workdir, fake_claude, monkeypatch
):
    fake_claude([{"text": "one"}, {"text": "two"}])
    monkeypatch.setattr(storefailure, "RETRY_DELAYS_S", (0.1,))
    real_complete = db.complete_iteration
    failed: list[int] = []

    def fail_once(iteration, *args, **kwargs):
        if not failed:
            failed.append(iteration.n)
            raise StoreError(f"cannot record iteration {iteration.n}: database is locked")
        return real_complete(iteration, *args, **kwargs)

    monkeypatch.setattr(db, "complete_iteration", fail_once)

    async def scenario() -> tuple[LoopRecord, list[EventRecord]]:
        manager = LoopManager(db)
        await manager.start()
        loop = await manager.create(hook_spec(new_workdir(), max_iterations=5))
        await until(lambda: db.get_loop(loop.id).status is not LoopStatus.RUNNING)
        await manager.close()
        return db.get_loop(loop.id), db.events_since(0, loop_id=loop.id)

    final, events = run(scenario())

    assert failed == [1]
    assert (final.status, final.stop_reason) == (LoopStatus.STOPPED, StopReason.INTERRUPTED)
    assert final.stop_detail == (
        "the database failed: cannot record iteration 1: database is locked; its session has ended"
    )
    errors = [e.data["message"] for e in events if e.event_type == "error"]
    assert errors == [
        "the database failed: cannot record iteration 1: database is locked;"
        " its session has ended: the loop stops"
    ]
    assert events[-1].event_type == "stopped"
