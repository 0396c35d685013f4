"""Full transcripts: every iteration's whole output is stored as it arrives, reads back as raw
bytes or as text, can be followed while it grows, and gives back what an agent spent when its
runner died before recording it."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.claude_session import session_tokens, transcript_path
from ralphctl.agents.claude_stream import ClaudeStreamParser
from ralphctl.agents.events import AgentEvent, RawLine
from ralphctl.agents.process import OUT_OF_MEMORY
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.costs import price_for
from ralphctl.domain.model import TokenUsage
from ralphctl.domain.states import LoopStatus
from ralphctl.engine import transcript_writer
from ralphctl.engine.leftovers import interrupt_leftovers
from ralphctl.engine.transcript_reader import (
    IterationNotFound,
    OversizedLine,
    check_iteration,
    follow_chunks,
    parser_for,
    transcript_lines,
    transcript_text,
)
from ralphctl.engine.transcript_writer import SessionTranscripts, TranscriptRecorder
from ralphctl.store.errors import StoreError
from ralphctl.store.records import IterationRecord, LoopRecord
from ralphctl.store.repository import Store
from ralphctl.store.transcript_chunks import append_chunk, iter_transcript
from tests.engine.test_runner import DONE, Recorder, new_loop, run


def transcript(db: Store, loop_id: str, n: int) -> bytes:
    return b"".join(iter_transcript(db, loop_id, n))


def text_of(raw: bytes) -> str:
    return "".join(transcript_text(transcript_lines([raw]), ClaudeStreamParser()))


NOISY = {
    "text": "wrote a",
    "garbage": ["WARNING: something odd", "\u001b[31mred\u0000"],
    "edits": [{"path": "a.txt", "content": "a"}],
    "cost_usd": 0.01,
}


def test_every_iteration_keeps_the_agent_s_whole_output_stray_lines_included(db, workdir):
    loop, config = new_loop(db, workdir, [NOISY, {"text": DONE, "cost_usd": 0.02}])
    run(db, loop, config)

    first = transcript(db, loop.id, 1)
    lines = first.splitlines()
    assert json.loads(lines[0])["subtype"] == "init"
    assert b"WARNING: something odd" in lines
    assert "\u001b[31mred\u0000".encode() in lines
    assert json.loads(lines[-1])["type"] == "result"
    assert b"<promise>COMPLETE</promise>" in transcript(db, loop.id, 2)


def test_a_transcript_reads_as_text_for_people(db, workdir):
    loop, config = new_loop(db, workdir, [NOISY, {"text": DONE, "cost_usd": 0.02}])
    run(db, loop, config)

    text = text_of(transcript(db, loop.id, 1))

    assert "WARNING: something odd\n" in text
    assert "\ufffd[31mred\ufffd\n" in text  # escape sequences and NUL never reach a terminal
    assert f"→ Write {workdir / 'a.txt'}\n" in text
    assert "wrote a\n" in text
    assert text.endswith("── finished: ok · $0.01\n")


def test_lines_outside_the_stream_are_shown_live(db, workdir):
    loop, config = new_loop(db, workdir, [{**NOISY, "text": DONE}])
    observer = Recorder()
    run(db, loop, config, observer=observer)

    raw = [event for event in observer.agent_events if isinstance(event, RawLine)]
    assert raw == [RawLine("WARNING: something odd"), RawLine("\ufffd[31mred\ufffd")]


def test_an_over_long_line_is_kept_whole_in_the_transcript_and_reported(
    db, workdir, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr("ralphctl.agents.process.MAX_PARSED_LINE_BYTES", 1000)
    long_line = "y" * 5000
    loop, config = new_loop(db, workdir, [{"text": DONE, "garbage": [long_line]}])
    observer = Recorder()
    final = run(db, loop, config, observer=observer)

    assert final.status is LoopStatus.COMPLETED  # the result line still parsed
    assert long_line.encode() in transcript(db, loop.id, 1).splitlines()
    warnings = [e.data["message"] for e in observer.events if e.event_type == "warning"]
    assert "1 output line(s) longer than 1,000 bytes were not parsed" in warnings[0]


def test_an_over_long_line_shows_as_its_size_in_text():
    lines: list[bytes | OversizedLine] = [b"before", OversizedLine(523_000_000), b"after"]

    text = "".join(transcript_text(lines, ClaudeStreamParser()))

    assert text == ("before\n[a line of 523,000,000 bytes, too long to show: see --raw]\nafter\n")


def test_streamed_text_pieces_join_and_whole_blocks_end_their_line():
    def delta(text: str) -> bytes:
        event = {"type": "content_block_delta", "delta": {"type": "text_delta", "text": text}}
        return json.dumps({"type": "stream_event", "event": event}).encode()

    lines = [delta("Hel"), delta("lo"), b"plain line", delta("more")]

    text = "".join(transcript_text(lines, ClaudeStreamParser()))

    assert text == "Hello\nplain line\nmore\n"


def test_asking_for_an_iteration_that_never_ran_is_a_clear_not_found(db, workdir):
    loop, _ = new_loop(db, workdir, [{"text": DONE}])

    with pytest.raises(IterationNotFound, match=f"loop {loop.id} has no iteration 3"):
        check_iteration(db, loop, 3)


# -- the recorder ---------------------------------------------------------------------------


def begun(db: Store, workdir: Path) -> str:
    loop, _ = new_loop(db, workdir, [{"text": DONE}])
    db.begin_iteration(IterationRecord(loop.id, 1, datetime.now(UTC)))
    return str(loop.id)


def test_output_before_the_store_opens_is_held_then_written(db, workdir):
    loop_id = begun(db, workdir)

    async def scenario() -> None:
        recorder = TranscriptRecorder(loop_id, 1)
        recorder.write(b"early ")
        recorder.flush()
        recorder.attach(db)
        recorder.write(b"late")
        summary = await recorder.close()
        assert summary.problem() is None

    asyncio.run(scenario())
    assert transcript(db, loop_id, 1) == b"early late"


def test_output_beyond_what_can_be_held_before_the_store_opens_is_reported_lost(
    db, workdir, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(transcript_writer, "HELD_LIMIT_BYTES", 10)
    loop_id = begun(db, workdir)

    async def scenario() -> str | None:
        recorder = TranscriptRecorder(loop_id, 1)
        for piece in (b"0123456789", b"lost"):
            recorder.write(piece)
            recorder.flush()
        recorder.attach(db)
        return (await recorder.close()).problem()

    problem = asyncio.run(scenario())
    assert transcript(db, loop_id, 1) == b"0123456789"
    assert problem == (
        "the transcript is incomplete: 4 bytes of output arrived before the store was open "
        "and could not be held"
    )


def test_output_is_written_within_a_second_even_when_the_agent_goes_quiet(db, workdir):
    loop_id = begun(db, workdir)

    async def scenario() -> None:
        recorder = TranscriptRecorder(loop_id, 1, db)
        recorder.write(b"a line, then silence\n")
        await asyncio.sleep(transcript_writer.FLUSH_AFTER_S + 0.3)
        assert transcript(db, loop_id, 1) == b"a line, then silence\n"
        await recorder.close()

    asyncio.run(scenario())


def slowed(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Every chunk write waits ``seconds`` first (a database that makes writes wait)."""

    def slow(*args: Any) -> int:
        time.sleep(seconds)
        return append_chunk(*args)

    monkeypatch.setattr("ralphctl.store.transcript_chunks.append_chunk", slow)


def test_a_slow_database_holds_up_neither_the_output_nor_the_event_loop(
    db, workdir, monkeypatch: pytest.MonkeyPatch
):
    loop_id = begun(db, workdir)
    slowed(monkeypatch, 0.5)

    async def scenario() -> tuple[float, float]:
        recorder = TranscriptRecorder(loop_id, 1, db)
        started = time.monotonic()
        for piece in (b"one\n", b"two\n", b"three\n"):
            recorder.write(piece)
            recorder.flush()  # each piece a chunk of its own
        taking = time.monotonic() - started
        summary = await recorder.close()
        assert summary.problem() is None
        return taking, time.monotonic() - started

    taking, closing = asyncio.run(scenario())

    assert taking < 0.3  # three writes queued, none waited for
    assert closing >= 3 * 0.5  # close waits until all three are stored
    assert transcript(db, loop_id, 1) == b"one\ntwo\nthree\n"


def test_output_that_outruns_the_database_by_the_queue_limit_waits_so_memory_stays_bounded(
    db, workdir, monkeypatch: pytest.MonkeyPatch
):
    loop_id = begun(db, workdir)
    slowed(monkeypatch, 0.5)
    monkeypatch.setattr(transcript_writer, "QUEUED_LIMIT_BYTES", 8)

    async def scenario() -> list[float]:
        recorder = TranscriptRecorder(loop_id, 1, db)
        waits = []
        for piece in (b"1234", b"5678", b"abcd"):
            started = time.monotonic()
            recorder.write(piece)
            recorder.flush()
            waits.append(time.monotonic() - started)
        await recorder.close()
        return waits

    waits = asyncio.run(scenario())

    assert max(waits[:2]) < 0.3  # 8 bytes queued: the limit
    assert waits[2] >= 0.3  # the third waits for the first to be written
    assert transcript(db, loop_id, 1) == b"12345678abcd"


def test_a_store_failure_ends_the_recording_never_the_iteration(
    db, workdir, monkeypatch: pytest.MonkeyPatch
):
    loop_id = begun(db, workdir)

    def failing(*_args: object) -> int:
        raise StoreError("cannot record the transcript of iteration 1: disk I/O error")

    async def scenario() -> str | None:
        recorder = TranscriptRecorder(loop_id, 1, db)
        monkeypatch.setattr("ralphctl.store.transcript_chunks.append_chunk", failing)
        recorder.write(b"x" * transcript_writer.CHUNK_BYTES)
        recorder.write(b"more")
        summary = await recorder.close()
        assert (summary.raw_bytes, summary.lost_bytes) == (transcript_writer.CHUNK_BYTES + 4,) * 2
        return summary.problem()

    problem = asyncio.run(scenario())
    assert problem == (
        "the transcript is incomplete: cannot record the transcript of iteration 1: disk I/O error"
    )


# -- following ------------------------------------------------------------------------------


def following(db: Store, loop_id: str, n: int) -> tuple[threading.Thread, list[bytes]]:
    """A thread following iteration ``n``'s output, and what it has seen."""
    seen: list[bytes] = []
    follower = threading.Thread(
        target=lambda: seen.extend(follow_chunks(db, loop_id, n, poll_s=0.02))
    )
    follower.start()
    return follower, seen


def running_iteration(db: Store, workdir: Path) -> LoopRecord:
    """A running loop at its iteration 1, which printed ``first``."""
    loop, _ = new_loop(db, workdir, [{"text": DONE}])
    loop = db.save_loop(replace(loop, status=LoopStatus.RUNNING))
    db.begin_iteration(IterationRecord(loop.id, 1, datetime.now(UTC)))
    append_chunk(db, loop.id, 1, 0, b"first\n")
    return loop


def end_iteration_1(db: Store, loop: LoopRecord) -> None:
    done = replace(db.iterations(loop.id)[0], status="ok", completed_at=datetime.now(UTC))
    db.complete_iteration(done, replace(loop, iteration=1))


def test_following_shows_output_as_it_arrives_and_ends_when_the_next_iteration_begins(db, workdir):
    loop = running_iteration(db, workdir)
    follower, seen = following(db, loop.id, 1)

    for seq, piece in enumerate([b"second\n", b"third\n"], start=1):
        append_chunk(db, loop.id, 1, seq, piece)
    end_iteration_1(db, loop)
    db.begin_iteration(IterationRecord(loop.id, 2, datetime.now(UTC)))
    follower.join(timeout=10)

    assert not follower.is_alive()
    assert seen == [b"first\n", b"second\n", b"third\n"]


def test_following_the_last_iteration_waits_for_the_loop_to_end_and_shows_its_late_tail(
    db, workdir
):
    loop = running_iteration(db, workdir)
    follower, seen = following(db, loop.id, 1)

    end_iteration_1(db, loop)  # a hook-mode session: the Stop was allowed, claude still runs
    time.sleep(0.2)
    assert follower.is_alive()
    append_chunk(db, loop.id, 1, 1, b'{"type":"result"}\n')  # its closing line, late
    db.save_loop(replace(db.get_loop(loop.id), status=LoopStatus.COMPLETED))
    follower.join(timeout=10)

    assert not follower.is_alive()
    assert seen == [b"first\n", b'{"type":"result"}\n']


def test_following_ends_when_the_loop_s_runner_is_gone(db, workdir):
    loop = running_iteration(db, workdir)
    db.save_loop(replace(loop, runner_pid=2**22 + 12345, runner_host=socket.gethostname()))
    follower, seen = following(db, loop.id, 1)
    follower.join(timeout=10)

    assert not follower.is_alive()
    assert seen == [b"first\n"]


# -- what a dead runner's agent spent -------------------------------------------------------

RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "result": "done",
    "session_id": "s-1",
    "total_cost_usd": 0.42,
    "usage": {"input_tokens": 1000, "output_tokens": 50},
}


def left_running(db: Store, workdir: Path, output: bytes) -> str:
    """A loop whose runner died during iteration 1, after the agent printed ``output``."""
    loop, _ = new_loop(db, workdir, [{"text": DONE, "cost_usd": 0.01}])
    db.save_loop(replace(loop, status=LoopStatus.RUNNING, started_at=datetime.now(UTC)))
    db.begin_iteration(IterationRecord(loop.id, 1, datetime.now(UTC)))
    append_chunk(db, loop.id, 1, 0, output)
    return str(loop.id)


def test_a_dead_runner_s_unrecorded_cost_is_recovered_from_the_transcript(db, workdir):
    loop_id = left_running(db, workdir, b'{"type":"system"}\n' + json.dumps(RESULT).encode())

    found = interrupt_leftovers(db, [db.get_loop(loop_id)])[loop_id]

    (iteration,) = db.iterations(loop_id)
    assert (iteration.status, iteration.cost_usd, iteration.cost_source) == (
        "interrupted",
        0.42,
        "recovered",
    )
    assert (iteration.tokens_input, iteration.tokens_output) == (1000, 50)
    assert db.get_loop(loop_id).cost_usd == pytest.approx(0.42)
    assert "the usage of iteration 1 was recovered from its transcript ($0.42)" in (found.message())


def test_a_resumed_loop_counts_the_recovered_cost_in_its_totals(db, workdir):
    loop_id = left_running(db, workdir, json.dumps(RESULT).encode() + b"\n")
    loop = db.get_loop(loop_id)
    config = LoopConfig.from_mapping(loop.config)
    observer = Recorder()

    final = run(db, loop, config, observer=observer)

    iterations = db.iterations(loop_id)
    assert [(it.n, it.status, it.cost_source) for it in iterations] == [
        (1, "interrupted", "recovered"),
        (2, "ok", "reported"),
    ]
    assert final.cost_usd == pytest.approx(sum(it.cost_usd or 0 for it in iterations))
    assert final.cost_usd == pytest.approx(0.43)
    warnings = [e.data["message"] for e in observer.events if e.event_type == "warning"]
    assert any("recovered from its transcript" in message for message in warnings)


def test_nothing_is_recovered_when_the_agent_printed_no_result(db, workdir):
    loop_id = left_running(db, workdir, b'{"type":"system","subtype":"init"}\nhalf a li')

    found = interrupt_leftovers(db, [db.get_loop(loop_id)])[loop_id]

    assert found.recovered == {}
    (iteration,) = db.iterations(loop_id)
    assert (iteration.cost_usd, iteration.cost_source) == (None, None)


# -- retention ------------------------------------------------------------------------------


def with_an_old_transcript(db: Store, workdir: Path) -> tuple[str, LoopConfig]:
    """A paused loop whose iteration 1 ran three days ago and kept its output."""
    loop, config = new_loop(db, workdir, [{"text": DONE}])
    old = datetime.now(UTC) - timedelta(days=3)
    done = IterationRecord(loop.id, 1, old, status="ok", completed_at=old)
    db.begin_iteration(done)
    db.complete_iteration(done, replace(loop, iteration=1))
    append_chunk(db, loop.id, 1, 0, b"old output")
    db.save_loop(replace(db.get_loop(loop.id), status=LoopStatus.PAUSED))
    return loop.id, config


def test_transcripts_older_than_the_retention_go_when_a_loop_begins(
    db, workdir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    settings = tmp_path / "config.toml"
    settings.write_text("[loops]\ntranscript_retention_days = 2\n")
    monkeypatch.setenv("RALPHCTL_CONFIG", str(settings))
    loop_id, config = with_an_old_transcript(db, workdir)

    run(db, db.get_loop(loop_id), config)

    assert transcript(db, loop_id, 1) == b""
    assert b"<promise>COMPLETE</promise>" in transcript(db, loop_id, 2)


def test_by_default_every_transcript_is_kept(
    db, workdir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "none.toml"))
    loop_id, config = with_an_old_transcript(db, workdir)

    run(db, db.get_loop(loop_id), config)

    assert transcript(db, loop_id, 1) == b"old output"


def test_an_invalid_retention_deletes_nothing_and_says_why(
    db, workdir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    settings = tmp_path / "config.toml"
    settings.write_text("[loops]\ntranscript_retention_days = -1\n")
    monkeypatch.setenv("RALPHCTL_CONFIG", str(settings))
    loop_id, config = with_an_old_transcript(db, workdir)
    observer = Recorder()

    run(db, db.get_loop(loop_id), config, observer=observer)

    assert transcript(db, loop_id, 1) == b"old output"
    warnings = [e.data["message"] for e in observer.events if e.event_type == "warning"]
    assert any(
        m.startswith("transcript retention not applied:") and "transcript_retention_days" in m
        for m in warnings
    )


# -- the agent's own record of the session, when the transcript has no result ---------------

SESSION_ID = "0d6f3e0a-1b2c-4d5e-8f90-123456789abc"


def session_file(config_dir: Path, *records: dict[str, object]) -> None:
    """Claude Code's transcript of SESSION_ID, as it writes it under its config dir."""
    path = config_dir / "projects" / "-tmp-work" / f"{SESSION_ID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def assistant(message_id: str, output_tokens: int) -> dict[str, object]:
    usage = {"input_tokens": 100, "output_tokens": output_tokens, "cache_read_input_tokens": 0}
    message = {"id": message_id, "model": "claude-opus-4-5", "usage": usage, "content": []}
    return {"type": "assistant", "message": message}


def test_without_a_result_in_the_transcript_the_agent_s_session_record_is_priced(
    db, workdir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    # a response written as two lines (one per block) counts once: its last line wins
    session_file(tmp_path / "claude", assistant("m1", 5), assistant("m1", 20), assistant("m2", 7))
    loop_id = left_running(db, workdir, b'{"type":"system","subtype":"init"}\n')
    db.save_loop(replace(db.get_loop(loop_id), agent="claude"))
    with db.transaction("record the session") as conn:
        conn.exec_driver_sql(f"UPDATE iterations SET agent_session_id = '{SESSION_ID}'")

    interrupt_leftovers(db, [db.get_loop(loop_id)])

    (iteration,) = db.iterations(loop_id)
    price = price_for("claude-opus-4-5")
    assert price is not None
    expected = price.cost(TokenUsage(input=200, output=27))
    assert (iteration.tokens_input, iteration.tokens_output) == (200, 27)
    assert (iteration.cost_usd, iteration.cost_source) == (pytest.approx(expected), "recovered")
    assert db.get_loop(loop_id).cost_usd == pytest.approx(expected)


def test_a_session_id_that_is_not_one_is_never_made_a_path(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))

    assert transcript_path("../../etc/passwd") is None
    assert session_tokens("*") == ()


def test_a_session_s_output_follows_the_iteration_running_when_it_arrives(db, workdir):
    loop_id = begun(db, workdir)
    running = [1]

    async def scenario() -> None:
        first = SessionTranscripts(db, loop_id, lambda: running[0])
        first.write(b"one\n")
        running[0] = 2
        first.write(b"two\n")
        await first.close()
        second = SessionTranscripts(db, loop_id, lambda: running[0])  # a resumed session
        second.write(b"more of two\n")
        await second.close()
        assert first.problems == second.problems == []

    asyncio.run(scenario())
    assert transcript(db, loop_id, 1) == b"one\n"
    assert transcript(db, loop_id, 2) == b"two\nmore of two\n"


# -- out of memory --------------------------------------------------------------------------


def test_running_out_of_memory_on_the_agent_s_output_fails_the_iteration_not_the_runner(
    db, workdir, monkeypatch: pytest.MonkeyPatch
):
    feed = ClaudeStreamParser.feed

    def starved(parser: ClaudeStreamParser, line: bytes) -> list[AgentEvent]:
        if line == b"too much":
            raise MemoryError
        return feed(parser, line)

    monkeypatch.setattr(ClaudeStreamParser, "feed", starved)
    steps: list[dict[str, Any]] = [{"text": "one", "garbage": ["too much"]}, {"text": DONE}]
    loop, config = new_loop(db, workdir, steps)

    final = run(db, loop, config)

    assert final.status is LoopStatus.COMPLETED
    first, second = db.iterations(loop.id)
    assert first.status == "error"
    assert (first.error_message or "").startswith(OUT_OF_MEMORY)
    assert second.status == "ok"
    assert b"too much" in transcript(db, loop.id, 1)


def test_the_output_of_an_agent_this_version_does_not_know_reads_as_printed(db, workdir):
    loop, _ = new_loop(db, workdir, [{"text": DONE}])
    unknown = replace(loop, agent="an-agent-from-the-future")

    text = "".join(transcript_text([b'{"type":"x"}', b"plain"], parser_for(unknown)))

    assert text == '{"type":"x"}\nplain\n'
