"""The pinned Claude Code CLI, driven for real against the scripted mock Messages API."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.mockapi import DEFAULT_MODEL, ApiError, Reply, ToolCall, Usage, expected_cost
from tests.realcli.harness import OLDEST_VERSION, ClaudeRun, RealClaude, real_claude_session
from tests.realcli.record_cassettes import cassette_dir
from tests.realcli.scenarios import SCENARIOS, SESSION_ID

pytestmark = pytest.mark.real_cli

CASSETTES = Path(__file__).parent / "cassettes"

Played = tuple[RealClaude, ClaudeRun]


@pytest.fixture(scope="module")
def played(claude_bin, tmp_path_factory) -> Callable[[str], Played]:
    """Each named scenario, run once per module however many tests look at it."""
    runs: dict[str, Played] = {}

    def play(name: str) -> Played:
        if name not in runs:
            root = tmp_path_factory.mktemp(name)
            with real_claude_session(claude_bin, root) as claude:
                runs[name] = claude, SCENARIOS[name].play(claude)
        return runs[name]

    return play


def test_a_text_reply_ends_with_a_result_line_costing_the_scripted_usage(played):
    claude, run = played("text_reply")

    assert run.exit_code == 0
    assert run.result["is_error"] is False
    assert run.result["result"] == "All done."
    assert run.result["total_cost_usd"] == expected_cost(
        [Usage(input_tokens=1000, output_tokens=100)]
    )
    (request,) = claude.server.requests
    assert request.body["model"] == DEFAULT_MODEL
    assert request.body["stream"] is True
    assert "Do the task in TASK.md." in request.user_texts()


def test_a_write_call_under_accept_edits_creates_the_file_and_returns_its_result(played):
    claude, run = played("write_accept_edits")

    assert run.exit_code == 0
    assert (claude.project / "notes.txt").read_text() == "hello from the mock\n"
    _, second = claude.server.main_requests
    (tool_result,) = second.tool_results()
    assert tool_result["tool_use_id"] == "toolu_mock_000"
    assert "is_error" not in tool_result
    assert run.result["result"] == "Wrote notes.txt."
    assert run.result["num_turns"] == 2
    turns = SCENARIOS["write_accept_edits"].turns
    assert run.result["total_cost_usd"] == expected_cost(turns)  # bit for bit


def test_an_overloaded_api_is_an_error_result_with_exit_status_1(played):
    _, run = played("overloaded_529")

    assert run.exit_code == 1
    assert run.result["subtype"] == "success"  # sic: judge by is_error
    assert run.result["is_error"] is True
    assert run.result["api_error_status"] == 529
    assert run.result["total_cost_usd"] == 0


def test_the_default_permission_mode_denies_write_and_still_exits_0(played):
    claude, run = played("permission_denied_write")

    assert run.exit_code == 0
    assert not (claude.project / "notes.txt").exists()
    (denial,) = run.result["permission_denials"]
    assert denial["tool_name"] == "Write"
    assert [e["tool_name"] for e in run.of_type("system", "permission_denied")] == ["Write"]
    (tool_result,) = claude.server.main_requests[1].tool_results()
    assert tool_result["is_error"] is True


def test_a_given_session_id_names_the_session_everywhere(played):
    claude, run = played("session_id")

    assert run.init["session_id"] == SESSION_ID
    assert run.result["session_id"] == SESSION_ID
    assert claude.server.requests[0].header("x-claude-code-session-id") == SESSION_ID
    assert claude.transcript(SESSION_ID).is_file()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_cassette_still_matches_the_pinned_cli(played, name):
    """Re-record (python -m tests.realcli.record_cassettes) when this fails after a CLI bump."""
    _, run = played(name)
    recorded = json.loads((CASSETTES / f"{name}.json").read_text())
    lines = [json.loads(line) for line in (CASSETTES / f"{name}.jsonl").read_text().splitlines()]

    assert run.exit_code == recorded["exit_code"]
    assert [shape(e) for e in run.events] == [shape(e) for e in lines]


@pytest.mark.parametrize("claude_version", [OLDEST_VERSION], indirect=True)
@pytest.mark.parametrize(
    "name", sorted(path.stem for path in cassette_dir(OLDEST_VERSION).glob("*.jsonl"))
)
def test_each_cassette_of_the_oldest_version_still_matches_it(claude_bin, tmp_path, name):
    """Re-record with ``python -m tests.realcli.record_cassettes --version 2.1.100 NAME``."""
    folder = cassette_dir(OLDEST_VERSION)
    with real_claude_session(claude_bin, tmp_path, OLDEST_VERSION) as claude:
        run = SCENARIOS[name].play(claude)
    recorded = json.loads((folder / f"{name}.json").read_text())
    lines = [json.loads(line) for line in (folder / f"{name}.jsonl").read_text().splitlines()]

    assert run.exit_code == recorded["exit_code"]
    assert [shape(e) for e in run.events] == [shape(e) for e in lines]


def shape(event: dict[str, Any]) -> tuple[str, str | None]:
    return event["type"], event.get("subtype")


def test_the_script_runs_on_across_processes_until_it_is_exhausted(real_claude):
    real_claude.server.set_script(Reply("first"), ApiError(529), Reply("third"))

    runs = [real_claude.run("go") for _ in range(4)]

    assert [r.exit_code for r in runs] == [0, 1, 0, 0]
    assert [r.result["result"] for r in runs[2:]] == ["third", "(script exhausted)"]
    assert [r.turn for r in real_claude.server.exhausted_requests] == [3]


def test_a_callable_turn_sees_the_tool_result_it_answers(real_claude):
    def echo_tool_output(request):
        (tool_result,) = request.tool_results()
        return Reply(f"The command said: {tool_result['content']}")

    real_claude.server.set_script(ToolCall("Bash", {"command": "echo 42"}), echo_tool_output)

    run = real_claude.run("go", "--allowedTools", "Bash")

    assert run.result["result"] == "The command said: 42"


def test_side_requests_get_the_side_answer_and_consume_no_turn(real_claude):
    hook = {"type": "prompt", "prompt": "Is the task done? $ARGUMENTS"}
    real_claude.server.script.side_answer = Reply('{"ok": true, "reason": "done"}', Usage(0, 0))
    real_claude.server.set_script(Reply("Done."))

    run = real_claude.run("go", "--settings", json.dumps({"hooks": {"Stop": [{"hooks": [hook]}]}}))

    assert run.result["result"] == "Done."
    (side,) = real_claude.server.side_requests
    assert side.body["tools"] == []
    assert "Is the task done?" in side.user_texts()[-1]
    assert run.result["total_cost_usd"] == expected_cost([Reply("Done.")])
