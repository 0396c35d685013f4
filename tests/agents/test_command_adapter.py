"""The command agent's command line: its argv, where the prompt goes, what it refuses."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentRequest, AgentUnavailable
from ralphctl.agents.command import MAX_ARGV_PROMPT_BYTES, CommandAdapter, PromptTooLong
from ralphctl.agents.registry import adapter_for

PROMPT_FILE = Path("/run/user/1000/ralphctl/prompts/loop-1-sess.md")


def request(**fields: Any) -> AgentRequest:
    base = AgentRequest(
        prompt="Fix the failing test.",
        workdir=Path("/w"),
        iteration=3,
        session_id="sess-1",
        prompt_path=PROMPT_FILE,
    )
    return replace(base, **fields)


def test_the_prompt_goes_on_stdin_when_the_command_names_no_placeholder() -> None:
    command = CommandAdapter("my-agent --yes 'two words'").build_command(request())

    assert list(command.argv) == ["my-agent", "--yes", "two words"]
    assert command.stdin == b"Fix the failing test."
    assert command.prompt_file is None
    assert command.env == {"RALPHCTL_ITERATION": "3"}


def test_prompt_is_replaced_by_the_prompt_and_stdin_stays_empty() -> None:
    command = CommandAdapter("my-agent --message={prompt}").build_command(request())

    assert list(command.argv) == ["my-agent", "--message=Fix the failing test."]
    assert command.stdin == b""


def test_prompt_file_names_a_private_file_the_process_layer_writes() -> None:
    command = CommandAdapter("my-agent --prompt-file {prompt_file}").build_command(request())

    assert list(command.argv) == ["my-agent", "--prompt-file", str(PROMPT_FILE)]
    assert command.prompt_file == PROMPT_FILE
    assert command.stdin == b"Fix the failing test."  # written to the file, not piped


def test_placeholders_are_replaced_once_so_a_prompt_naming_one_stays_as_written() -> None:
    tricky = request(prompt="Explain {prompt_file} and {prompt}.")

    command = CommandAdapter("my-agent {prompt}").build_command(tricky)

    assert list(command.argv) == ["my-agent", "Explain {prompt_file} and {prompt}."]


def test_the_loops_extra_arguments_follow_the_command() -> None:
    extra = request(extra_args=("--model", "local", "--in", "{prompt_file}"))

    command = CommandAdapter("my-agent").build_command(extra)

    assert list(command.argv) == ["my-agent", "--model", "local", "--in", str(PROMPT_FILE)]
    assert command.prompt_file == PROMPT_FILE


def test_a_prompt_too_long_for_an_argument_is_refused_with_the_fix() -> None:
    long = request(prompt="x" * (MAX_ARGV_PROMPT_BYTES + 1))

    with pytest.raises(PromptTooLong, match=r"use \{prompt_file\}"):
        CommandAdapter("my-agent {prompt}").build_command(long)


def test_a_prompt_too_long_for_an_argument_is_both_a_bad_setting_and_a_stop() -> None:
    assert issubclass(PromptTooLong, ValueError)  # --dry-run: exit 2
    assert issubclass(PromptTooLong, AgentUnavailable)  # a running loop stops, exit 3


def test_a_long_prompt_is_fine_on_stdin_or_in_a_file() -> None:
    long = request(prompt="x" * (MAX_ARGV_PROMPT_BYTES * 10))

    assert CommandAdapter("my-agent").build_command(long).stdin == long.prompt.encode()
    assert CommandAdapter("a {prompt_file}").build_command(long).prompt_file == PROMPT_FILE


def test_prompt_file_without_a_path_for_it_is_refused() -> None:
    with pytest.raises(ValueError, match="no prompt file"):
        CommandAdapter("a {prompt_file}").build_command(request(prompt_path=None))


def test_the_permission_mode_is_not_passed_and_none_is_claimed() -> None:
    adapter = CommandAdapter("my-agent")

    command = adapter.build_command(request(permission_mode="plan"))

    assert list(command.argv) == ["my-agent"]
    assert adapter.capabilities.permission_modes == frozenset()


@pytest.mark.parametrize(
    ("line", "problem"),
    [("", "agent_command is empty"), ("my-agent 'open", "cannot be split")],
)
def test_a_command_line_that_is_not_one_is_refused(line: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        CommandAdapter(line)


def test_the_registry_makes_it_from_the_loop_settings() -> None:
    adapter = adapter_for(
        "command",
        options={
            "agent_command": "my-agent",
            "agent_tokens_regex": r"in=(?P<input>\d+)",
            "agent_cost_regex": r"\$(?P<cost>[0-9.]+)",
            "model": "gpt-5-codex",
        },
    )

    assert isinstance(adapter, CommandAdapter)
    assert adapter.capabilities.reports_tokens
    assert adapter.capabilities.reports_cost
    assert adapter.model == "gpt-5-codex"


def test_the_registry_says_the_command_is_needed() -> None:
    with pytest.raises(ValueError, match="--agent-command"):
        adapter_for("command")


def test_a_missing_program_is_reported_with_the_setting_to_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))

    with pytest.raises(AgentUnavailable, match=r"'no-such-agent' .*--agent-command"):
        CommandAdapter("no-such-agent --go").check_available()


def test_a_program_on_path_or_relative_to_the_work_dir_is_available() -> None:
    CommandAdapter("sh -c 'exit 0'").check_available()
    CommandAdapter("./scripts/agent.sh").check_available()  # checked in the work dir, when run
