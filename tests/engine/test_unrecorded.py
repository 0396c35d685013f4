"""What the database refuses is kept in the loop's journal and recorded once, on resume."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.engine.leftovers import interrupt_leftovers, replay_journal
from ralphctl.engine.unrecorded import journal_path, keep, read_journal
from ralphctl.store.errors import StoreError
from ralphctl.store.records import IterationRecord, LoopRecord
from ralphctl.store.repository import Store
from tests.engine.test_runner import DONE, new_loop, run

pytestmark = pytest.mark.timeout(60)

STEP = {"text": "working", "cost_usd": 0.1, "tokens": {"input": 10, "output": 2}}


def refuse(db: Store, monkeypatch: pytest.MonkeyPatch, method: str, n: int) -> None:
    """The store refuses ``method`` for iteration ``n`` (as under a lock past the timeout)."""
    real = getattr(db, method)

    def refusing(iteration: IterationRecord, *args: object) -> object:
        if iteration.n == n:
            raise StoreError(f"cannot record iteration {n}: database is locked")
        return real(iteration, *args)

    monkeypatch.setattr(db, method, refusing)


def running(db: Store, workdir: Path) -> LoopRecord:
    """A loop whose runner stopped after iteration 1 ($0.10)."""
    loop, _ = new_loop(db, workdir, [STEP])
    return db.save_loop(replace(loop, status=LoopStatus.RUNNING, iteration=1, cost_usd=0.1))


def finished(loop: LoopRecord, n: int, cost: float) -> IterationRecord:
    now = datetime.now(UTC)
    return IterationRecord(
        loop.id, n, now, status="ok", completed_at=now, cost_usd=cost, tokens_input=7
    )


@pytest.mark.parametrize("method", ["complete_iteration", "begin_iteration"])
def test_an_iteration_the_store_refuses_is_recorded_with_its_cost_on_resume(
    db, workdir, monkeypatch, method
):
    loop, config = new_loop(db, workdir, [STEP, STEP, {"text": DONE, "cost_usd": 0.1}])
    refuse(db, monkeypatch, method, 2)

    with pytest.raises(StoreError, match="database is locked"):
        run(db, loop, config)

    kept = read_journal(workdir, loop.id)
    assert [(entry.record.n, entry.record.status) for entry in kept] == [(2, "ok")]
    assert kept[0].record.cost_usd == pytest.approx(0.1)
    monkeypatch.undo()

    final = run(db, db.get_loop(loop.id), config)

    assert final.status is LoopStatus.COMPLETED
    iterations = db.iterations(loop.id)
    assert [(it.n, it.status, it.cost_usd) for it in iterations] == [
        (1, "ok", 0.1),
        (2, "ok", 0.1),
        (3, "ok", 0.1),
    ]
    assert final.cost_usd == pytest.approx(0.3) == db.get_loop(loop.id).cost_usd
    assert final.tokens_input == 20  # the last step reports no tokens
    assert not journal_path(workdir, loop.id).exists()
    kinds = [e.event_type for e in db.events_since(0, loop_id=loop.id)]
    assert kinds.count("iteration_started") == 3
    assert kinds.count("iteration_completed") == 3
    warnings = [
        e.data["message"] for e in db.events_since(0, loop_id=loop.id) if "message" in e.data
    ]
    assert any("iteration 2 (ok, $0.10), which the database had refused" in w for w in warnings)


def test_a_journal_is_recorded_exactly_once_though_replayed_twice(db, workdir):
    loop = running(db, workdir)
    keep(workdir, finished(loop, 2, 0.25), [("iteration_completed", {"iteration": 2})])
    saved = journal_path(workdir, loop.id).read_bytes()

    first = replay_journal(db, loop)
    journal_path(workdir, loop.id).write_bytes(saved)  # as if the runner died before removing it
    second = replay_journal(db, loop)

    assert first.problem is None
    assert [it.n for it in first.recorded] == [2]
    assert second.recorded == []
    stored = db.get_loop(loop.id)
    assert (stored.iteration, stored.cost_usd, stored.tokens_input) == (2, pytest.approx(0.35), 7)
    assert [it.n for it in db.iterations(loop.id)] == [2]
    assert not journal_path(workdir, loop.id).exists()


def test_a_checkpoint_kept_with_its_iteration_is_recorded_once_with_it(db, workdir):
    loop = running(db, workdir)
    made = [("checkpoint_created", {"iteration": 2, "commit_sha": "c0ffee" * 6 + "beef"})]
    keep(workdir, finished(loop, 2, 0.25), [("iteration_completed", {"iteration": 2}), *made])
    saved = journal_path(workdir, loop.id).read_bytes()

    replay_journal(db, loop)
    journal_path(workdir, loop.id).write_bytes(saved)
    replay_journal(db, loop)

    assert [(c.iteration, c.commit_sha) for c in db.checkpoints(loop.id)] == [
        (2, "c0ffee" * 6 + "beef")
    ]


def test_a_corrupt_journal_is_set_aside_with_a_clear_warning_and_nothing_is_counted(
    db, workdir, caplog
):
    loop = running(db, workdir)
    keep(workdir, finished(loop, 2, 0.25), [])
    path = journal_path(workdir, loop.id)
    path.write_text(path.read_text()[:-20])

    found = interrupt_leftovers(db, [loop])[loop.id]

    assert found.replayed == []
    assert found.journal_problem is not None
    assert str(path) in found.journal_problem
    assert "set aside as unrecorded-" in found.message()
    assert "nothing in it was recorded" in caplog.text
    assert not path.exists()
    assert path.with_name(path.name + ".corrupt").exists()
    assert db.get_loop(loop.id).cost_usd == pytest.approx(0.1)
    assert db.iterations(loop.id) == []


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        json.dumps({"version": 99, "loop_id": "x", "iterations": []}),
        json.dumps({"version": 1, "loop_id": "LOOP", "iterations": [{"record": {"n": 1}}]}),
        json.dumps(
            {
                "version": 1,
                "loop_id": "LOOP",
                "iterations": [{"record": {"bogus": 1}, "events": []}],
            }
        ),
        json.dumps(
            {
                "version": 1,
                "loop_id": "LOOP",
                "iterations": [
                    {
                        "record": {"loop_id": "LOOP", "n": 2, "started_at": "2026-11-23T10:00:00"},
                        "events": [],
                        "loop": {"consecutive_errors": 1},
                    }
                ],
            }
        ),
    ],
    ids=["not json", "another version", "missing fields", "unknown field", "partial loop state"],
)
def test_every_unreadable_journal_is_refused_with_its_path(db, workdir, content):
    loop = running(db, workdir)
    path = journal_path(workdir, loop.id)
    path.parent.mkdir(exist_ok=True)
    path.write_text(content.replace("LOOP", loop.id))

    replay = replay_journal(db, loop)

    assert replay.recorded == []
    assert replay.problem is not None
    assert str(path) in replay.problem


def test_an_iteration_whose_start_was_refused_is_interrupted_on_resume(db, workdir):
    loop = running(db, workdir)
    begun = IterationRecord(loop.id, 2, datetime.now(UTC), agent_session_id="s-2")
    keep(workdir, begun, [("iteration_started", {"iteration": 2})])

    found = interrupt_leftovers(db, [loop])[loop.id]

    assert found.interrupted == [2]
    assert [(it.n, it.status) for it in db.iterations(loop.id)] == [(2, "interrupted")]
    assert found.applied_to(loop).iteration == 2


def test_a_journal_that_cannot_be_written_is_logged_not_raised(tmp_path, caplog):
    blocked = tmp_path / "work"
    blocked.mkdir()
    (blocked / ".ralph").write_text("a file where the directory should be")

    kept = keep(blocked, IterationRecord("abc", 1, datetime.now(UTC)), [])

    assert kept is False
    assert "cannot keep iteration 1 of loop abc" in caplog.text


def test_a_work_dir_that_is_gone_or_a_file_has_no_journal(tmp_path):
    a_file = tmp_path / "a file"
    a_file.write_text("")

    assert read_journal(tmp_path / "gone", "abc") == []
    assert read_journal(a_file, "abc") == []


def test_an_error_kept_in_the_journal_still_counts_towards_the_breaker(db, workdir, monkeypatch):
    error = {"is_error": True, "api_error_status": 529}
    loop, config = new_loop(db, workdir, [error], circuit_breaker_threshold=3)
    refuse(db, monkeypatch, "complete_iteration", 2)
    with pytest.raises(StoreError):
        run(db, loop, config)
    monkeypatch.undo()

    final = run(db, db.get_loop(loop.id), config)

    assert final.stop_reason is StopReason.CIRCUIT_BREAKER
    assert final.iteration == 3  # the journal's error counted: 1, 2 (replayed), 3
    assert final.consecutive_errors == 3 == db.get_loop(loop.id).consecutive_errors


def test_a_replayed_iteration_brings_the_loop_s_streaks_and_runtime_up_to_it(db, workdir):
    loop = running(db, workdir)
    kept = replace(finished(loop, 2, 0.2), status="error")
    state = {"consecutive_errors": 4, "breaker_state": {"status": "closed"}, "runtime_s": 99.0}
    keep(workdir, kept, [], state)

    replay_journal(db, loop)

    stored = db.get_loop(loop.id)
    assert (stored.consecutive_errors, stored.breaker_state, stored.runtime_s) == (
        4,
        {"status": "closed"},
        99.0,
    )
