"""The command agent end to end with small real shell commands, through the process layer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ralphctl.agents.base import AgentRequest
from ralphctl.agents.command import CommandAdapter
from ralphctl.agents.process import run_agent
from ralphctl.domain.markers import detect, parse_marker
from ralphctl.domain.model import IterationResult, TokenUsage

pytestmark = pytest.mark.timeout(60)

PROMPT = "Add a test.\nWhen done, end your reply with <promise>COMPLETE</promise>.\n"
MARKER = parse_marker("<promise>COMPLETE</promise>")


def run(command: str, workdir: Path, **patterns: str) -> IterationResult:
    adapter = CommandAdapter(
        command,
        tokens_regex=patterns.get("tokens"),
        cost_regex=patterns.get("cost"),
        model=patterns.get("model"),
    )
    adapter.check_available()
    request = AgentRequest(
        prompt=PROMPT,
        workdir=workdir,
        iteration=1,
        session_id="sess",
        prompt_path=workdir.parent / "private" / "prompt.md",
    )
    built = adapter.build_command(request)
    return asyncio.run(run_agent(built, adapter.new_parser(), cwd=workdir, timeout=30))


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def test_a_command_reading_stdin_gets_the_prompt(workdir: Path) -> None:
    result = run("sh -c 'wc -l; echo done'", workdir)

    assert result.final_text == "2\ndone"  # the prompt: two lines
    assert not result.is_error


def test_a_command_given_the_prompt_as_an_argument(workdir: Path) -> None:
    result = run("printf '%s\\n' {prompt}", workdir)

    assert result.final_text == PROMPT  # and the empty line printf adds


def test_a_command_reading_its_prompt_file_which_is_gone_afterwards(workdir: Path) -> None:
    result = run('sh -c \'cat "$0"; ls -l "$0" | cut -c1-10\' {prompt_file}', workdir)

    assert result.final_text == PROMPT + "-rw-------"
    assert list((workdir.parent / "private").iterdir()) == []


def test_a_command_that_writes_a_file_and_declares_completion(workdir: Path) -> None:
    script = "echo 'def test_it(): pass' > test_new.py; echo 'Added test_new.py.'; "
    script += "echo '<promise>COMPLETE</promise>'"

    result = run(f'sh -c "{script}"', workdir)

    assert (workdir / "test_new.py").is_file()
    assert detect(result.final_text, MARKER, prompt=PROMPT).completed


def test_a_command_echoing_the_prompt_does_not_complete(workdir: Path) -> None:
    result = run("sh -c 'cat; echo Still working.'", workdir)

    assert result.final_text == PROMPT + "Still working."
    assert not detect(result.final_text, MARKER, prompt=PROMPT).completed


def test_tokens_and_cost_printed_by_the_command_are_counted(workdir: Path) -> None:
    script = "echo step; echo 'usage: 1,500 in / 200 out'; echo 'usage: 500 in / 50 out'; "
    script += "echo 'total cost: $0.042'"

    result = run(
        f'sh -c "{script}"',
        workdir,
        tokens=r"usage: (?P<input>[\d,]+) in / (?P<output>\d+) out",
        cost=r"total cost: \$(?P<cost>[\d.]+)",
    )

    assert result.tokens == TokenUsage(input=2000, output=250)
    assert result.cost_usd == pytest.approx(0.042)
    assert result.final_text == "step"


def test_a_failing_command_is_an_error_with_its_stderr(workdir: Path) -> None:
    result = run("sh -c 'echo trying; echo \"fatal: HTTP 401 Unauthorized\" >&2; exit 3'", workdir)

    assert result.is_error
    assert result.exit_code == 3
    assert result.api_error_status == 401
    assert result.error_message == (
        "the agent exited with code 3; stderr: fatal: HTTP 401 Unauthorized"
    )
