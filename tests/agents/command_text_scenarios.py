"""The real Claude Code CLI in its plain-text mode (``claude -p --output-format text``), driven
as a command agent would drive any CLI that prints text: scripted scenarios against the mock
Messages API, played live (real-CLI tests) or recorded into cassettes/command/."""

from __future__ import annotations

import asyncio
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ralphctl.agents.base import AgentRequest
from ralphctl.agents.command import CommandAdapter
from ralphctl.agents.process import run_agent
from ralphctl.domain.model import IterationResult
from tests.mockapi import ApiError, Reply, ToolCall, Turn, Usage
from tests.realcli.harness import NEWEST_VERSION, RealClaude, real_claude_session

CASSETTES = Path(__file__).parent / "cassettes" / "command"
PROMPT = (
    "Write notes.txt.\nWhen the task is done, end your reply with <promise>COMPLETE</promise>.\n"
)


@dataclass(frozen=True)
class TextScenario:
    name: str
    shows: str
    turns: list[Turn]
    args: list[str] = field(default_factory=list)


SCENARIOS = {
    s.name: s
    for s in [
        TextScenario(
            "write_then_complete",
            "a Write tool call under acceptEdits, then a final text ending with the marker; "
            "only the final text is printed",
            [
                ToolCall(
                    "Write",
                    {"file_path": "notes.txt", "content": "hello from the mock\n"},
                    text_before="I will write the notes.",
                    usage=Usage(input_tokens=1200, output_tokens=80),
                ),
                Reply("Wrote notes.txt.\n\n<promise>COMPLETE</promise>"),
            ],
            ["--permission-mode", "acceptEdits"],
        ),
        TextScenario(
            "overloaded_529",
            "an API error: its message on stdout, exit status 1",
            [ApiError(529, "overloaded_error", "Overloaded")],
        ),
        TextScenario(
            "rate_limited_429",
            "a rate limit: its message on stdout, exit status 1",
            [ApiError(429, "rate_limit_error", "Rate limited")],
        ),
    ]
}


@dataclass(frozen=True)
class TextRun:
    result: IterationResult
    stdout: bytes
    argv: list[str]


def agent_command(claude: RealClaude, args: list[str]) -> str:
    """The CLI in text mode, in the mock's hermetic environment (``env -i``)."""
    env = [f"{key}={value}" for key, value in claude.env.items()]
    return shlex.join(
        ["env", "-i", *env, str(claude.binary), "-p", "--output-format", "text", *args]
    )


def play(scenario: TextScenario, claude: RealClaude) -> TextRun:
    """Run the scenario through the command agent and the process layer."""
    claude.server.set_script(*scenario.turns)
    adapter = CommandAdapter(agent_command(claude, scenario.args))
    request = AgentRequest(PROMPT, claude.project, iteration=1, session_id="text")
    command = adapter.build_command(request)
    stdout = bytearray()
    run = run_agent(
        command, adapter.new_parser(), cwd=claude.project, timeout=60, on_output=stdout.extend
    )
    result = asyncio.run(run)
    argv = ["claude", "-p", "--output-format", "text", *scenario.args]
    return TextRun(result, bytes(stdout), argv)


def record(scenario: TextScenario, binary: Path) -> None:
    """Write the scenario's stdout and a sidecar with how the run ended."""
    with real_claude_session(binary) as claude:
        run = play(scenario, claude)
    (CASSETTES / f"{scenario.name}.txt").write_bytes(run.stdout)
    sidecar = {
        "scenario": scenario.name,
        "shows": scenario.shows,
        "argv": run.argv,
        "exit_code": run.result.exit_code,
        "stderr_tail": run.result.stderr_tail,
        "claude_code_version": NEWEST_VERSION,
    }
    (CASSETTES / f"{scenario.name}.json").write_text(json.dumps(sidecar, indent=2) + "\n")


if __name__ == "__main__":  # .venv/bin/python -m tests.agents.command_text_scenarios
    from tests.realcli.harness import INSTALL_HINT, claude_binary

    found = claude_binary(NEWEST_VERSION)
    if found is None:
        raise SystemExit(INSTALL_HINT)
    for each in SCENARIOS.values():
        record(each, found)
        print(f"recorded {each.name}")
