"""What a hook-mode iteration left running spent: its own messages, not its whole session's.

One ``claude`` process runs many hook-mode iterations; its ``result`` line totals all of them,
and Claude Code's own session record holds the whole session. An interrupted iteration is
given only what its own messages show (tests/manager/test_hook_crash.py kills a real runner).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ralphctl.domain.costs import price_for
from ralphctl.domain.model import TokenUsage
from ralphctl.domain.states import LoopStatus
from ralphctl.engine.leftovers import interrupt_leftovers
from ralphctl.store.records import IterationRecord
from ralphctl.store.repository import Store
from ralphctl.store.transcript_chunks import append_chunk
from tests.engine.test_runner import DONE, new_loop

SESSION_ID = "5b0c9d7e-2f3a-4b5c-8d9e-0a1b2c3d4e5f"
MODEL = "claude-opus-4-5"
BEGAN = datetime.now(UTC) - timedelta(minutes=5)


def assistant(message_id: str, output_tokens: int, at: datetime | None = None) -> dict[str, object]:
    usage = {"input_tokens": 100, "output_tokens": output_tokens}
    message = {
        "id": message_id,
        "model": MODEL,
        "usage": usage,
        "content": [{"type": "text", "text": "x"}],
    }
    record: dict[str, object] = {"type": "assistant", "message": message}
    if at is not None:
        record["timestamp"] = at.isoformat().replace("+00:00", "Z")  # as Claude Code writes it
    return record


def lines(*records: dict[str, object]) -> bytes:
    return b"".join(json.dumps(record).encode() + b"\n" for record in records)


def hook_loop_left_running(db: Store, workdir: Path, output: bytes) -> str:
    """A hook-mode loop whose runner died during iteration 2 of one session, after its
    ``claude`` process printed ``output`` (iteration 1 was recorded: 1000 tokens, $0.01)."""
    loop, _ = new_loop(db, workdir, [{"text": DONE}])
    loop = replace(loop, mode="hook", agent="claude", agent_session_id=SESSION_ID)
    db.save_loop(replace(loop, status=LoopStatus.RUNNING, started_at=BEGAN))
    first = IterationRecord(loop.id, 1, BEGAN, status="ok", completed_at=BEGAN)
    db.begin_iteration(first)
    recorded = replace(first, tokens_input=1000, cost_usd=0.01, cost_source="estimated")
    db.complete_iteration(
        recorded, replace(db.get_loop(loop.id), iteration=1, tokens_input=1000, cost_usd=0.01)
    )
    db.begin_iteration(IterationRecord(loop.id, 2, BEGAN + timedelta(minutes=1)))
    append_chunk(db, loop.id, 2, 0, output)
    return str(loop.id)


def cost_of(tokens: TokenUsage) -> float:
    price = price_for(MODEL)
    assert price is not None
    return price.cost(tokens)


def test_an_interrupted_hook_iteration_gets_what_its_own_messages_show(db, tmp_path):
    process_total = {
        "type": "result",
        "is_error": False,
        "result": "done",
        "total_cost_usd": 5.0,  # every iteration of the process: the first one is recorded
        "usage": {"input_tokens": 9000, "output_tokens": 900},
    }
    # a message of two content blocks: two lines that repeat its usage
    output = lines(assistant("m2", 30), assistant("m2", 30), process_total)
    loop_id = hook_loop_left_running(db, tmp_path, output)

    found = interrupt_leftovers(db, [db.get_loop(loop_id)])[loop_id]

    second = db.iterations(loop_id)[1]
    assert (second.status, second.cost_source) == ("interrupted", "recovered")
    assert (second.tokens_input, second.tokens_output) == (100, 30)  # counted once
    assert second.cost_usd == pytest.approx(cost_of(TokenUsage(input=100, output=30)))
    loop = db.get_loop(loop_id)
    assert loop.cost_usd == pytest.approx(0.01 + second.cost_usd)
    assert loop.tokens_input == 1100
    assert found.recovered[2].cost_usd == pytest.approx(second.cost_usd)


def test_without_messages_in_its_transcript_the_session_record_since_it_began_is_priced(
    db, tmp_path, monkeypatch: pytest.MonkeyPatch
):
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    session = claude / "projects" / "-tmp-work" / f"{SESSION_ID}.jsonl"
    session.parent.mkdir(parents=True)
    during_first, during_second = BEGAN + timedelta(seconds=10), BEGAN + timedelta(minutes=2)
    session.write_bytes(
        lines(
            assistant("m1", 500, during_first),  # iteration 1's: recorded already
            assistant("m2", 20, during_second),
            assistant("m3", 7, during_second),
            assistant("m4", 9),  # no time: not known to be this iteration's
        )
    )
    loop_id = hook_loop_left_running(db, tmp_path, b'{"type":"system","subtype":"init"}\n')

    interrupt_leftovers(db, [db.get_loop(loop_id)])

    second = db.iterations(loop_id)[1]
    assert (second.tokens_input, second.tokens_output) == (200, 27)
    expected = cost_of(TokenUsage(input=200, output=27))
    assert (second.cost_usd, second.cost_source) == (pytest.approx(expected), "recovered")


def test_a_hook_iteration_with_no_usage_anywhere_recovers_nothing(db, tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "no-claude"))
    loop_id = hook_loop_left_running(db, tmp_path, b"half a li")

    found = interrupt_leftovers(db, [db.get_loop(loop_id)])[loop_id]

    assert found.recovered == {}
    second = db.iterations(loop_id)[1]
    assert (second.status, second.cost_usd, second.cost_source) == ("interrupted", None, None)
