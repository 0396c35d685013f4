"""A runner's ``Inbox``: the same pending messages as a full read of the loop's events, read
incrementally (only what was stored since its last look)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from ralphctl.domain.events import EventType
from ralphctl.domain.steering import DELIVERED_KEY
from ralphctl.engine.steering import Inbox, pending_messages, tell
from ralphctl.store.records import EventRecord, IterationRecord
from ralphctl.store.repository import Store
from tests.engine.test_runner import new_loop


def deliver(db: Store, loop_id: str, n: int, seqs: list[int]) -> None:
    """What a runner stores when iteration ``n`` starts with messages ``seqs`` in its prompt."""
    started = {"iteration": n, DELIVERED_KEY: seqs}
    db.begin_iteration(
        IterationRecord(loop_id, n, datetime.now(UTC)),
        [(str(EventType.ITERATION_STARTED), started)],
    )


def test_the_inbox_agrees_with_a_full_read_as_messages_come_and_go(db: Store, workdir: Path):
    loop, _config = new_loop(db, workdir, [])
    inbox = Inbox(loop.id)
    assert inbox.pending(db) == []

    first = tell(db, loop, "Use tabs.", "ana")
    second = tell(db, loop, "Then spaces.", "bo")
    assert inbox.pending(db) == pending_messages(db, loop.id)
    assert [m.seq for m in inbox.pending(db)] == [first.seq, second.seq]

    deliver(db, loop.id, 1, [first.seq])
    third = tell(db, loop, "Never mind.", "ana")
    assert [m.seq for m in inbox.pending(db)] == [second.seq, third.seq]
    assert inbox.pending(db) == pending_messages(db, loop.id)

    deliver(db, loop.id, 2, [second.seq, third.seq])
    assert inbox.pending(db) == [] == pending_messages(db, loop.id)


def test_the_inbox_reads_only_events_stored_since_its_last_look(db: Store, workdir: Path):
    loop, _config = new_loop(db, workdir, [])
    inbox = Inbox(loop.id)
    tell(db, loop, "Use tabs.", "ana")
    inbox.pending(db)
    read: list[int] = []
    events_of = db.events_of

    def counting(loop_id: str, types: Sequence[str], after: int = 0) -> list[EventRecord]:
        found = events_of(loop_id, types, after)
        read.extend(event.seq for event in found)
        return found

    db.events_of = counting  # type: ignore[method-assign]
    newer = tell(db, loop, "Then spaces.", "bo")
    assert len(inbox.pending(db)) == 2
    assert inbox.pending(db)[1].seq == newer.seq
    assert read == [newer.seq]
