"""Events carry a global, strictly increasing seq that clients resume from; errors are kept."""

from __future__ import annotations

import pytest

from ralphctl.store.records import ErrorRecord
from ralphctl.store.repository import Store
from tests.store.factories import new_loop


@pytest.fixture
def two_loops(store: Store) -> tuple[str, str]:
    return store.create_loop(new_loop("loop-a")).id, store.create_loop(new_loop("loop-b")).id


def test_an_event_reads_back_as_appended(store: Store, two_loops: tuple[str, str]) -> None:
    event = store.append_event("loop-a", "iteration.completed", {"n": 1, "cost": [0.5, None]})

    assert store.events_since(0) == [event]
    assert event.timestamp.tzinfo is not None


def test_seq_strictly_increases_across_loops(store: Store, two_loops: tuple[str, str]) -> None:
    seqs = [store.append_event(loop, "tick", {}).seq for loop in two_loops * 3]

    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)


def test_events_since_pages_through_everything_once(
    store: Store, two_loops: tuple[str, str]
) -> None:
    appended = [store.append_event("loop-a", "tick", {"i": i}) for i in range(7)]

    pages, seq = [], 0
    while page := store.events_since(seq, limit=3):
        pages.append([event.data["i"] for event in page])
        seq = page[-1].seq

    assert pages == [[0, 1, 2], [3, 4, 5], [6]]
    assert store.events_since(appended[-1].seq) == []


def test_events_since_can_follow_one_loop(store: Store, two_loops: tuple[str, str]) -> None:
    for loop in two_loops * 2:
        store.append_event(loop, "tick", {"loop": loop})

    followed = store.events_since(0, loop_id="loop-b")

    assert [event.data["loop"] for event in followed] == ["loop-b", "loop-b"]


def test_an_error_reads_back_as_added(store: Store, two_loops: tuple[str, str]) -> None:
    added = store.add_error("loop-a", 2, "agent_crash", "exit 137", {"stderr": "Killed"})
    store.add_error("loop-b", None, "config", "bad budget", {})

    assert store.errors("loop-a") == [added]
    assert added == ErrorRecord(
        added.id, "loop-a", 2, "agent_crash", "exit 137", {"stderr": "Killed"}, added.created_at
    )


def test_errors_are_listed_in_the_order_added(store: Store, two_loops: tuple[str, str]) -> None:
    for message in ("first", "second", "third"):
        store.add_error("loop-a", None, "agent_crash", message, {})

    assert [error.message for error in store.errors("loop-a")] == ["first", "second", "third"]
