"""The command agent on a real CLI's plain text: Claude Code's ``--output-format text``,
recorded (cassettes/command/) and live against the mock Messages API."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ralphctl.agents.command_output import CommandOutputParser
from ralphctl.domain.analyzer import ErrorClass, classify_error
from ralphctl.domain.markers import detect, parse_marker
from ralphctl.domain.model import IterationResult
from ralphctl.domain.usage_limits import LimitSource, detect_usage_limit
from tests.agents.command_text_scenarios import CASSETTES, PROMPT, SCENARIOS, TextRun, play
from tests.agents.streams import exited
from tests.realcli.harness import real_claude_session

MARKER = parse_marker("<promise>COMPLETE</promise>")


def without_port(output: bytes) -> bytes:
    return re.sub(rb"127\.0\.0\.1:\d+", b"127.0.0.1:PORT", output)


def replay(name: str) -> IterationResult:
    meta = json.loads((CASSETTES / f"{name}.json").read_text())
    parser = CommandOutputParser()
    for line in (CASSETTES / f"{name}.txt").read_bytes().splitlines():
        parser.feed(line)
    return parser.finish(exited(meta["exit_code"], meta["stderr_tail"]))


@pytest.fixture(scope="module")
def live(claude_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], TextRun]:
    """Each scenario played once against the real CLI, with its project kept for a look."""
    runs: dict[str, TextRun] = {}

    def run(name: str) -> TextRun:
        if name not in runs:
            root = tmp_path_factory.mktemp(name)
            with real_claude_session(claude_bin, root) as claude:
                runs[name] = play(SCENARIOS[name], claude)
        return runs[name]

    return run


def check_completion(result: IterationResult) -> None:
    assert not result.is_error
    assert result.final_text == "Wrote notes.txt.\n\n<promise>COMPLETE</promise>"
    assert detect(result.final_text, MARKER, prompt=PROMPT).completed


def check_overloaded(result: IterationResult) -> None:
    assert result.is_error
    assert result.exit_code == 1
    assert result.api_error_status == 529
    assert classify_error(result) is ErrorClass.API_OVERLOADED


def check_rate_limited(result: IterationResult) -> None:
    assert result.is_error
    assert classify_error(result) is ErrorClass.RATE_LIMITED
    limit = detect_usage_limit(result, time.time())
    assert limit is not None  # the loop is parked until the reset, not failed
    assert limit.source is LimitSource.HTTP_429


CHECKS = {
    "write_then_complete": check_completion,
    "overloaded_529": check_overloaded,
    "rate_limited_429": check_rate_limited,
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_a_recorded_text_run_reads_as_the_live_one_did(name: str) -> None:
    CHECKS[name](replay(name))


@pytest.mark.real_cli
@pytest.mark.parametrize("name", sorted(CHECKS))
def test_the_real_cli_in_text_mode_as_a_command_agent(
    live: Callable[[str], TextRun], name: str
) -> None:
    run = live(name)

    CHECKS[name](run.result)
    recorded = (CASSETTES / f"{name}.txt").read_bytes()
    assert without_port(run.stdout) == without_port(recorded)  # the mock's port varies


@pytest.mark.real_cli
def test_the_real_clis_tool_call_lands_its_file(claude_bin: Path, tmp_path: Path) -> None:
    with real_claude_session(claude_bin, tmp_path) as claude:
        play(SCENARIOS["write_then_complete"], claude)

        assert (claude.project / "notes.txt").read_text() == "hello from the mock\n"
