"""copilot_session: the tokens the Copilot CLI kept of a session, read back for recovery."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from ralphctl.agents.copilot import SPEC
from ralphctl.agents.copilot_session import copilot_home, session_tokens
from ralphctl.domain.model import ModelTokens, TokenUsage

RECORDED = Path(__file__).parents[1] / "cassettes" / "copilot" / "session_events.jsonl"
SESSION = "ee78835e-2c64-4984-8c58-4276bf98f7c6"


def home_with_the_recorded_session(tmp_path: Path) -> Path:
    folder = tmp_path / ".copilot" / "session-state" / SESSION
    folder.mkdir(parents=True)
    shutil.copyfile(RECORDED, folder / "events.jsonl")
    return tmp_path / ".copilot"


def test_every_usage_record_of_the_session_counts_with_its_cache_taken_out(tmp_path):
    home = home_with_the_recorded_session(tmp_path)

    found = session_tokens(SESSION, home=home)

    assert found == (ModelTokens("gpt-4.1", TokenUsage(500 + 600, 50 + 20, cache_read=300)),)


def test_only_the_records_since_a_moment_count(tmp_path):
    home = home_with_the_recorded_session(tmp_path)
    between = datetime(2026, 11, 23, 19, 21, 0, 800_000, tzinfo=UTC)

    assert session_tokens(SESSION, between, home=home) == (
        ModelTokens("gpt-4.1", TokenUsage(600, 20, cache_read=100)),
    )


def test_an_unknown_or_malformed_session_has_no_tokens(tmp_path):
    home = home_with_the_recorded_session(tmp_path)

    assert session_tokens("5e55a1d0-0000-4000-8000-000000000000", home=home) == ()
    assert session_tokens("../../etc", home=home) == ()


def test_the_home_is_copilot_home_else_dot_copilot(tmp_path):
    assert copilot_home({"COPILOT_HOME": "/x"}, tmp_path) == Path("/x")
    assert copilot_home({}, tmp_path) == tmp_path / ".copilot"
    assert SPEC.session_tokens is session_tokens
