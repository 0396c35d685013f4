"""Reading the Codex CLI's own record of a thread (its rollout file) offline: the tokens of
each answer by model, since a moment, and a thread's totals."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentRequest
from ralphctl.agents.codex import CodexAdapter
from ralphctl.agents.codex_session import rollout_path, session_tokens, thread_totals
from ralphctl.domain.model import UNNAMED_MODEL, ModelTokens, TokenUsage
from tests.agents.streams import exited

THREAD = "01a209d6-86b0-7f91-ba84-b5a41bc74946"


def record(stamp: str, kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": stamp, "type": kind, "payload": payload})


def usage(input_tokens: int, output_tokens: int, cached: int = 0) -> dict[str, Any]:
    return {
        "type": "token_usage_record",
        "usage": {
            "input_tokens": input_tokens,
            "cached_input_tokens": cached,
            "output_tokens": output_tokens,
        },
    }


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    return tmp_path


def write_rollout(home: Path, *lines: str) -> Path:
    path = home / "sessions" / "2026" / "11" / "23" / f"rollout-2026-11-23T19-16-23-{THREAD}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def two_turns(home: Path) -> Path:
    return write_rollout(
        home,
        record("2026-11-23T19:16:23.867Z", "session_meta", {"id": THREAD}),
        record("2026-11-23T19:16:24.100Z", "token_usage_record", usage(10, 1)),
        record("2026-11-23T19:16:24.125Z", "turn_context", {"model": "gpt-5.5"}),
        record("2026-11-23T19:16:24.198Z", "token_usage_record", usage(500, 50)),
        "not json",
        record("2026-11-23T19:16:24.668Z", "token_usage_record", usage(1000, 70, cached=300)),
        record("2026-11-23T20:00:00.000Z", "turn_context", {"model": "gpt-5.4"}),
        record("2026-11-23T20:00:01.000Z", "token_usage_record", usage(2000, 20)),
    )


def test_the_tokens_of_every_answer_are_added_up_per_model(home):
    two_turns(home)
    assert session_tokens(THREAD) == (
        ModelTokens(UNNAMED_MODEL, TokenUsage(10, 1)),
        ModelTokens("gpt-5.5", TokenUsage(input=1200, output=120, cache_read=300)),
        ModelTokens("gpt-5.4", TokenUsage(input=2000, output=20)),
    )


def test_only_the_answers_since_a_moment_count_when_asked(home):
    two_turns(home)
    since = datetime(2026, 11, 23, 19, 30, tzinfo=UTC)
    assert session_tokens(THREAD, since) == (ModelTokens("gpt-5.4", TokenUsage(2000, 20)),)


def test_a_threads_totals_cover_all_of_it(home):
    two_turns(home)
    assert thread_totals(THREAD) == TokenUsage(input=3210, output=141, cache_read=300)


def test_an_unknown_thread_or_a_bad_id_reads_nothing(home):
    two_turns(home)
    assert rollout_path("01a209d6-0000-7000-8000-000000000000") is None
    assert rollout_path("../../etc/passwd") is None
    assert session_tokens("not-an-id") == ()
    assert thread_totals("01a209d6-0000-7000-8000-000000000000") == TokenUsage()


def test_resuming_a_thread_makes_the_parser_take_off_what_it_used_before(home):
    two_turns(home)
    adapter = CodexAdapter()
    request = AgentRequest(
        prompt="Go on.", workdir=Path("/w"), iteration=2, session_id=THREAD, resume=True
    )
    adapter.build_command(request)
    total = {"input_tokens": 4010, "cached_input_tokens": 300, "output_tokens": 171}
    parser = adapter.new_parser()
    parser.feed(json.dumps({"type": "turn.completed", "usage": total}).encode())
    assert parser.finish(exited(0)).tokens == TokenUsage(input=500, output=30)


def test_a_fresh_run_takes_nothing_off(home):
    two_turns(home)
    adapter = CodexAdapter()
    adapter.build_command(
        AgentRequest(prompt="Go.", workdir=Path("/w"), iteration=1, session_id=THREAD)
    )
    parser = adapter.new_parser()
    parser.feed(b'{"type":"turn.completed","usage":{"input_tokens":70,"output_tokens":7}}')
    assert parser.finish(exited(0)).tokens == TokenUsage(input=70, output=7)
