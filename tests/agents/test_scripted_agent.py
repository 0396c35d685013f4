"""The scripted agent, run for real as a subprocess through its adapter and run_agent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentRequest, AgentUnavailable
from ralphctl.agents.events import AgentEvent, TextChunk, ToolCall, ToolOutput
from ralphctl.agents.process import run_agent
from ralphctl.agents.scripted import ScriptedAdapter
from ralphctl.domain.model import IterationResult, PermissionDenial, RateLimitInfo, TokenUsage

pytestmark = pytest.mark.timeout(60)


def play(
    tmp_path: Path,
    steps: list[dict[str, Any]],
    *,
    iteration: int = 1,
    timeout: float | None = 30,
) -> tuple[IterationResult, list[AgentEvent], Path]:
    """Run iteration ``iteration`` of a script made of ``steps`` in ``tmp_path/work``."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": steps}))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    adapter = ScriptedAdapter(script)
    adapter.check_available()
    request = AgentRequest(
        prompt="Build the thing.", workdir=work, iteration=iteration, session_id="sess-42"
    )
    events: list[AgentEvent] = []
    result = asyncio.run(
        run_agent(
            adapter.build_command(request),
            adapter.new_parser(),
            cwd=work,
            timeout=timeout,
            on_event=events.append,
            grace_s=1,
        )
    )
    return result, events, work


def test_a_step_edits_files_for_real_and_reports_like_claude(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "old.txt").write_text("bye")

    result, events, _ = play(
        tmp_path,
        [
            {
                "text": "Wrote the app.\n<promise>DONE</promise>",
                "edits": [
                    {"path": "src/app.py", "content": "print('hi')\n"},
                    {"path": "NOTES.md", "append": "- one\n"},
                    {"path": "NOTES.md", "append": "- two\n"},
                    {"path": "old.txt", "delete": True},
                ],
                "cost_usd": 0.25,
                "tokens": {"input": 100, "output": 50, "cache_read": 7, "cache_write": 3},
            }
        ],
    )

    assert (work / "src" / "app.py").read_text() == "print('hi')\n"
    assert (work / "NOTES.md").read_text() == "- one\n- two\n"
    assert not (work / "old.txt").exists()
    assert [(e.name, e.edits_files) for e in events if isinstance(e, ToolCall)] == [
        ("Write", True),
        ("Edit", True),
        ("Edit", True),
        ("Bash", False),  # a deletion runs ``rm``: like Claude's Bash, not a known edit tool
    ]
    assert TextChunk("Wrote the app.\n<promise>DONE</promise>") in events
    assert result.final_text == "Wrote the app.\n<promise>DONE</promise>"
    assert not result.is_error
    assert result.exit_code == 0
    assert result.cost_usd == 0.25
    # Five assistant lines repeat the usage: only the result line's totals count.
    assert result.tokens == TokenUsage(input=100, output=50, cache_read=7, cache_write=3)
    assert result.session_id == "sess-42"
    assert result.num_turns == 2
    assert result.agent_version == "2.1.330-scripted"
    assert result.unparsed_lines == 0


def test_the_iteration_picks_the_step_and_the_last_step_repeats(tmp_path: Path) -> None:
    steps = [{"text": "first"}, {"text": "second"}]

    assert play(tmp_path, steps, iteration=1)[0].final_text == "first"
    assert play(tmp_path, steps, iteration=2)[0].final_text == "second"
    assert play(tmp_path, steps, iteration=5)[0].final_text == "second"


def test_a_path_outside_the_working_directory_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "escaped.txt"

    result, events, _ = play(
        tmp_path,
        [
            {
                "text": "tried",
                "edits": [
                    {"path": "../escaped.txt", "content": "x"},
                    {"path": str(outside), "content": "x"},
                ],
            }
        ],
    )

    assert not outside.exists()
    assert [e for e in events if isinstance(e, ToolOutput)] == [
        ToolOutput("toolu_scripted_001", is_error=True),
        ToolOutput("toolu_scripted_002", is_error=True),
    ]
    assert not result.is_error  # a refused tool call does not fail the run


def test_shell_commands_run_in_the_working_directory(tmp_path: Path) -> None:
    _, events, work = play(tmp_path, [{"text": "ran", "bash": ["pwd > where.txt", "exit 3"]}])

    assert (work / "where.txt").read_text().strip() == str(work.resolve())
    assert [e.is_error for e in events if isinstance(e, ToolOutput)] == [False, True]


def test_a_crash_step_ends_without_result_line(tmp_path: Path) -> None:
    result, _, _ = play(
        tmp_path, [{"text": "half way", "no_result": True, "stderr": "Segmentation fault\n"}]
    )

    assert result.is_error
    assert result.exit_code == 1
    assert result.final_text == "half way"
    assert result.error_message == (
        "no result line: the agent process ended without a result (exit code 1);"
        " stderr tail: Segmentation fault"
    )


def test_an_api_error_step_looks_like_claudes_api_errors(tmp_path: Path) -> None:
    result, _, _ = play(tmp_path, [{"is_error": True, "api_error_status": 529}])

    assert result.is_error
    assert result.api_error_status == 529
    assert result.exit_code == 1
    assert result.final_text == "API Error: 529"


def test_noise_rate_limits_and_denials_come_through(tmp_path: Path) -> None:
    result, _, _ = play(
        tmp_path,
        [
            {
                "text": "limited",
                "garbage": ["Warning: not json", "{broken"],
                "rate_limit": {
                    "status": "rejected",
                    "resetsAt": 1788436200,
                    "rateLimitType": "five_hour",
                },
                "permission_denials": [
                    {"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}
                ],
            }
        ],
    )

    assert result.unparsed_lines == 2
    assert result.rate_limit == RateLimitInfo("rejected", 1788436200.0, "five_hour")
    assert result.permission_denials == (
        PermissionDenial("Bash", "toolu_scripted_001", "rm -rf /"),
    )


def test_a_slow_step_is_stopped_by_the_timeout(tmp_path: Path) -> None:
    result, _, _ = play(tmp_path, [{"text": "late", "sleep_s": 30}], timeout=0.5)

    assert result.timed_out
    assert result.is_error
    assert result.final_text == ""


def test_a_broken_script_fails_the_run_with_a_message(tmp_path: Path) -> None:
    result, _, _ = play(tmp_path, [{"tokens": 5}])

    assert result.is_error
    assert result.exit_code == 2
    assert "bad step" in result.stderr_tail


def test_a_missing_script_makes_the_agent_unavailable(tmp_path: Path) -> None:
    with pytest.raises(AgentUnavailable, match="script not found"):
        ScriptedAdapter(tmp_path / "missing.json").check_available()


def test_the_command_runs_the_program_with_this_python() -> None:
    adapter = ScriptedAdapter("demo.json")
    command = adapter.build_command(
        AgentRequest(prompt="go", workdir=Path("/w"), iteration=4, session_id="s")
    )

    assert list(command.argv[1:3]) == ["-m", "ralphctl.agents.scripted_agent"]
    assert command.argv[3] == str(Path("demo.json").absolute())
    assert list(command.argv[4:]) == ["--session-id", "s"]
    assert command.env == {"RALPHCTL_ITERATION": "4"}
    assert command.stdin == b"go"
