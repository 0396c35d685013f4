"""Transcripts in the store: compressed chunks that read back exactly, page by page, and go
with their loop or with retention; recovered usage lands on the iteration and the loop."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ralphctl.store import transcript_chunks
from ralphctl.store.records import RecoveredUsage
from ralphctl.store.repository import Store
from ralphctl.store.transcript_chunks import (
    append_chunk,
    iter_transcript,
    iteration_status,
    prune_transcripts,
    read_chunks,
    transcript_sizes,
)
from tests.store.factories import T0, finished_iteration, new_loop, started_iteration


def a_loop_with_iterations(store: Store, *numbers: int, loop_id: str = "loop-t") -> str:
    store.create_loop(new_loop(loop_id))
    for n in numbers:
        store.begin_iteration(started_iteration(loop_id, n))
    return loop_id


def test_what_is_written_reads_back_exactly_in_order(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcript_chunks, "PAGE_CHUNKS", 2)  # several pages
    loop_id = a_loop_with_iterations(store, 1)
    pieces = [b'{"type":"system"}\n', b"\x00\xff garbage\n", b"x" * 100_000, b"\n", b"tail"]
    for seq, piece in enumerate(pieces):
        append_chunk(store, loop_id, 1, seq, piece)

    assert b"".join(iter_transcript(store, loop_id, 1)) == b"".join(pieces)
    assert [chunk.seq for chunk in read_chunks(store, loop_id, 1, after=2)] == [3, 4]


def test_chunks_are_stored_compressed_and_their_sizes_are_known(store: Store) -> None:
    loop_id = a_loop_with_iterations(store, 1, 2)
    stored = append_chunk(store, loop_id, 2, 0, b"abc" * 100_000)

    assert stored < 3_000
    assert transcript_sizes(store, loop_id) == {2: (300_000, stored)}


def test_an_iteration_without_chunks_reads_as_empty(store: Store) -> None:
    loop_id = a_loop_with_iterations(store, 1)

    assert list(iter_transcript(store, loop_id, 1)) == []
    assert iteration_status(store, loop_id, 1) == "running"
    assert iteration_status(store, loop_id, 2) is None


def test_retention_deletes_old_finished_transcripts_and_keeps_running_and_recent_ones(
    store: Store,
) -> None:
    loop_id = a_loop_with_iterations(store, 1, 2, 3)
    for n in (1, 2):
        store.complete_iteration(finished_iteration(loop_id, n), new_loop(loop_id, iteration=n))
    for n in (1, 2, 3):
        append_chunk(store, loop_id, n, 0, b"output")

    # iteration n started at T0 + n minutes; 1 and 2 are finished, 3 still runs
    deleted = prune_transcripts(store, started_before=T0 + timedelta(minutes=2, seconds=1))

    assert deleted == 2
    assert sorted(transcript_sizes(store, loop_id)) == [3]


def test_a_deleted_loop_takes_its_transcripts_with_it(store: Store) -> None:
    loop_id = a_loop_with_iterations(store, 1)
    append_chunk(store, loop_id, 1, 0, b"output")

    with store.transaction("delete the loop") as conn:
        conn.exec_driver_sql(f"DELETE FROM loops WHERE id = '{loop_id}'")

    assert transcript_sizes(store, loop_id) == {}


def test_recovered_usage_is_recorded_once_on_the_iteration_and_added_to_the_loop(
    store: Store,
) -> None:
    loop_id = a_loop_with_iterations(store, 1)
    store.save_loop(new_loop(loop_id, iteration=0, cost_usd=1.0, tokens_input=10))
    usage = RecoveredUsage(
        tokens_input=100, tokens_output=20, cost_usd=0.25, agent_session_id="session-1"
    )

    assert store.interrupt_running_iterations(loop_id, recovered={1: usage}) == [1]
    assert store.interrupt_running_iterations(loop_id, recovered={1: usage}) == []

    (iteration,) = store.iterations(loop_id)
    loop = store.get_loop(loop_id)
    assert (iteration.status, iteration.cost_usd, iteration.cost_source) == (
        "interrupted",
        0.25,
        "recovered",
    )
    assert (iteration.tokens_input, iteration.agent_session_id) == (100, "session-1")
    assert (loop.cost_usd, loop.tokens_input, loop.tokens_output) == (1.25, 110, 20)
