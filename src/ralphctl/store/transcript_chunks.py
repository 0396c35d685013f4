"""Transcripts: each iteration's raw agent output, stored as zlib-compressed chunks.

A chunk is compressed on its own, so a transcript can be read (and followed) chunk by chunk,
and what was written before a crash is readable without what would have come after it. Reads
are paged: a transcript of any size is never held whole. Writing is a run's hot path and
goes through ``Store`` (no SQLAlchemy import on SQLite); the readers import SQLAlchemy.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ralphctl.store.repository import Store

#: Measured on 100 MB of stream-json (tool results of source files, 1 MiB chunks, 2 busy
#: cores): level 1 writes 30 MB/s to SQLite or PostgreSQL and stores a fifth (x5.2); level 6
#: stores x6.7 but writes 10 MB/s, on the store's thread (``engine/storethread``). Speed wins.
COMPRESSION_LEVEL = 1
#: Chunks read per query: a page of at most this many chunks is in memory at once.
PAGE_CHUNKS = 8


@dataclass(frozen=True, slots=True)
class TranscriptChunk:
    seq: int
    data: bytes  # the raw output, decompressed


def append_chunk(store: Store, loop_id: str, n: int, seq: int, data: bytes) -> int:
    """Store ``data`` (raw output) as chunk ``seq`` of iteration ``n``; returns its stored size."""
    packed = zlib.compress(data, COMPRESSION_LEVEL)
    values = {
        "loop_id": loop_id,
        "n": n,
        "seq": seq,
        "data": packed,
        "raw_bytes": len(data),
        "created_at": datetime.now(UTC),
    }
    store.add_transcript_chunk(values)
    return len(packed)


def read_chunks(store: Store, loop_id: str, n: int, *, after: int = -1) -> list[TranscriptChunk]:
    """The next page of chunks of iteration ``n`` after chunk ``after``, in order."""
    from sqlalchemy import select

    from ralphctl.store.schema import transcript_chunks

    query = (
        select(transcript_chunks.c.seq, transcript_chunks.c.data)
        .where(
            transcript_chunks.c.loop_id == loop_id,
            transcript_chunks.c.n == n,
            transcript_chunks.c.seq > after,
        )
        .order_by(transcript_chunks.c.seq)
        .limit(PAGE_CHUNKS)
    )
    with store.transaction(f"read the transcript of iteration {n}") as conn:
        rows = conn.execute(query).all()
    return [TranscriptChunk(row.seq, zlib.decompress(row.data)) for row in rows]


def iter_transcript(store: Store, loop_id: str, n: int, *, after: int = -1) -> Iterator[bytes]:
    """Iteration ``n``'s output as stored so far, chunk by chunk, a page at a time."""
    while page := read_chunks(store, loop_id, n, after=after):
        for chunk in page:
            yield chunk.data
        after = page[-1].seq


def next_chunk_seq(store: Store, loop_id: str, n: int) -> int:
    """The seq the next chunk of iteration ``n`` takes: 0, or one after the last stored."""
    last = store.last_transcript_seq(loop_id, n)
    return 0 if last is None else last + 1


def iteration_status(store: Store, loop_id: str, n: int) -> str | None:
    """The status of iteration ``n`` (``running``, ``ok``…); None if it was never begun."""
    from sqlalchemy import select

    from ralphctl.store.schema import iterations

    query = select(iterations.c.status).where(iterations.c.loop_id == loop_id, iterations.c.n == n)
    with store.transaction(f"read iteration {n}") as conn:
        return conn.execute(query).scalar()


def transcript_sizes(store: Store, loop_id: str) -> dict[int, tuple[int, int]]:
    """Per iteration with a transcript: (raw bytes, stored bytes)."""
    from sqlalchemy import func, select

    from ralphctl.store.schema import transcript_chunks

    query = (
        select(
            transcript_chunks.c.n,
            func.sum(transcript_chunks.c.raw_bytes),
            func.sum(func.length(transcript_chunks.c.data)),
        )
        .where(transcript_chunks.c.loop_id == loop_id)
        .group_by(transcript_chunks.c.n)
    )
    with store.transaction("read transcript sizes") as conn:
        return {n: (int(raw), int(stored)) for n, raw, stored in conn.execute(query)}


def prune_transcripts(store: Store, started_before: datetime) -> int:
    """Delete the transcripts of finished iterations that started before ``started_before``;
    returns how many chunks went."""
    from sqlalchemy import delete, select, tuple_

    from ralphctl.store.schema import iterations, transcript_chunks

    old = select(iterations.c.loop_id, iterations.c.n).where(
        iterations.c.started_at < started_before, iterations.c.status != "running"
    )
    query = delete(transcript_chunks).where(
        tuple_(transcript_chunks.c.loop_id, transcript_chunks.c.n).in_(old)
    )
    with store.transaction("delete old transcripts") as conn:
        return conn.execute(query).rowcount
