"""Loops: stored and read back field for field, found by id or prefix, listed and saved."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.store.repository import LoopNotFound, Store, StoreError
from tests.store.factories import T0, ended_loop, new_loop


def test_a_loop_reads_back_exactly_as_created(store: Store) -> None:
    created = store.create_loop(ended_loop("loop-full"))

    assert store.get_loop("loop-full") == created
    assert created.updated_at is not None


def test_times_come_back_as_the_same_instant_in_utc(store: Store) -> None:
    store.create_loop(ended_loop("loop-tz"))

    until = store.get_loop("loop-tz").rate_limited_until

    assert until == datetime(2026, 3, 1, 13, 0, tzinfo=UTC)
    assert until is not None
    assert until.tzinfo is UTC


def test_enums_come_back_as_enums(store: Store) -> None:
    store.create_loop(ended_loop("loop-enum"))

    loop = store.get_loop("loop-enum")

    assert loop.status is LoopStatus.COMPLETED
    assert loop.stop_reason is StopReason.COMPLETION


def test_a_naive_time_is_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="naive datetime"):
        store.create_loop(new_loop(created_at=datetime(2026, 3, 1, 12, 0)))


def test_an_id_cannot_be_used_twice(store: Store) -> None:
    store.create_loop(new_loop("loop-twice"))

    with pytest.raises(StoreError, match="cannot create the loop"):
        store.create_loop(new_loop("loop-twice"))


def test_a_unique_prefix_of_four_characters_finds_the_loop(store: Store) -> None:
    store.create_loop(new_loop("a1b2c3d4"))
    store.create_loop(new_loop("ffff0000"))

    assert store.get_loop("a1b2").id == "a1b2c3d4"


def test_an_exact_id_wins_over_longer_ids_it_prefixes(store: Store) -> None:
    store.create_loop(new_loop("abcd"))
    store.create_loop(new_loop("abcdef"))

    assert store.get_loop("abcd").id == "abcd"


def test_an_ambiguous_prefix_names_the_candidates(store: Store) -> None:
    store.create_loop(new_loop("beef0001"))
    store.create_loop(new_loop("beef0002"))

    with pytest.raises(LoopNotFound, match="'beef' is ambiguous: it matches beef0001, beef0002"):
        store.get_loop("beef")


def test_a_missing_id_is_named_in_the_error(store: Store) -> None:
    with pytest.raises(LoopNotFound, match="no loop with id 'cafe1234'"):
        store.get_loop("cafe1234")


def test_a_prefix_shorter_than_four_characters_is_not_searched(store: Store) -> None:
    store.create_loop(new_loop("abc123"))

    with pytest.raises(LoopNotFound, match="a prefix needs at least 4 characters"):
        store.get_loop("abc")


def test_a_prefix_matches_case_sensitively_and_literally(store: Store) -> None:
    store.create_loop(new_loop("abcd1234"))

    with pytest.raises(LoopNotFound):
        store.get_loop("ABCD")
    with pytest.raises(LoopNotFound):
        store.get_loop("ab_d")


def test_loops_are_listed_newest_first(store: Store) -> None:
    for age in (3, 1, 2):
        store.create_loop(new_loop(f"loop-{age}", created_at=T0 - timedelta(hours=age)))

    assert [loop.id for loop in store.list_loops()] == ["loop-1", "loop-2", "loop-3"]
    assert [loop.id for loop in store.list_loops(limit=2)] == ["loop-1", "loop-2"]


def test_the_list_can_be_filtered_by_status(store: Store) -> None:
    store.create_loop(new_loop("loop-pending"))
    store.create_loop(new_loop("loop-running", status=LoopStatus.RUNNING))
    store.create_loop(new_loop("loop-paused", status=LoopStatus.PAUSED))

    active = store.list_loops(statuses={LoopStatus.RUNNING, LoopStatus.PAUSED})

    assert sorted(loop.id for loop in active) == ["loop-paused", "loop-running"]
    assert store.list_loops(statuses=[]) == []


def test_the_list_can_be_filtered_by_work_dir(store: Store) -> None:
    store.create_loop(new_loop("loop-a", status=LoopStatus.RUNNING, workdir="/w/a"))
    store.create_loop(new_loop("loop-b", status=LoopStatus.RUNNING, workdir="/w/b"))
    store.create_loop(new_loop("loop-a-done", status=LoopStatus.COMPLETED, workdir="/w/a"))

    in_a = store.list_loops(statuses={LoopStatus.RUNNING}, workdir="/w/a")

    assert [loop.id for loop in in_a] == ["loop-a"]
    assert store.list_loops(workdir="/w/c") == []


def test_saving_writes_back_every_mutable_field(store: Store) -> None:
    created = store.create_loop(new_loop("loop-save"))
    changed = ended_loop("loop-save")

    saved = store.save_loop(changed)

    assert store.get_loop("loop-save") == saved
    assert saved == dataclasses.replace(changed, updated_at=saved.updated_at)
    assert saved.updated_at is not None
    assert created.updated_at is not None
    assert saved.updated_at >= created.updated_at


def test_a_loop_saved_with_its_events_stores_both_in_one_transaction(store: Store) -> None:
    store.create_loop(new_loop("loop-end"))
    events: list[tuple[str, dict[str, Any]]] = [
        ("state_changed", {"status": "completed"}),
        ("completed", {"iteration": 3}),
    ]

    saved, stored = store.save_loop_with_events(ended_loop("loop-end"), events)

    assert store.get_loop("loop-end") == saved
    assert [(event.event_type, event.data) for event in stored] == events
    assert store.events_of("loop-end", ["state_changed", "completed"]) == stored


def test_a_loop_whose_events_cannot_be_stored_is_not_saved_either(store: Store) -> None:
    before = store.create_loop(new_loop("loop-torn"))
    unstorable: list[tuple[str, dict[str, Any]]] = [
        ("state_changed", {"status": "completed"}),
        ("completed", {"at": object()}),
    ]

    with pytest.raises(StoreError, match="cannot save the loop"):
        store.save_loop_with_events(ended_loop("loop-torn"), unstorable)

    assert store.get_loop("loop-torn") == before
    assert store.events_of("loop-torn", ["state_changed", "completed"]) == []


def test_saving_an_unknown_loop_fails(store: Store) -> None:
    with pytest.raises(LoopNotFound, match="no loop with id 'loop-ghost'"):
        store.save_loop(new_loop("loop-ghost"))
