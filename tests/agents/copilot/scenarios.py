"""Named real-CLI scenarios for Copilot, shared by the tests and by the cassette recorder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.agents.copilot.harness import CopilotRun, RealCopilot
from tests.mockapi import ApiError, Reply, ToolCall, Turn, Usage

SESSION_ID = "5e55a1d0-0000-4000-8000-00000000c0b1"
#: ``plan``, as the adapter maps it: every tool but file edits and shell commands.
READ_ONLY = ("--allow-all-tools", "--deny-tool=write", "--deny-tool=shell")
#: The CLI retries a 429 five times (about a second apart) before it gives up.
RATE_LIMIT_ATTEMPTS = 6


@dataclass(frozen=True)
class Scenario:
    """A script for the mock (made for the session's project dir: the CLI's file tools take
    absolute paths), the CLI arguments and what the run is meant to show."""

    name: str
    shows: str
    turns: Callable[[Path], Sequence[Turn]]
    args: Sequence[str] = ()
    prompt: str = "Do the task in TASK.md."

    def play(self, copilot: RealCopilot) -> CopilotRun:
        copilot.server.set_script(*self.turns(copilot.project))
        return copilot.run(self.prompt, *self.args)


def create_notes(project: Path) -> ToolCall:
    return ToolCall(
        "create",
        {"path": str(project / "notes.txt"), "file_text": "hello from the mock\n"},
        text_before="I will write the notes.",
        usage=Usage(input_tokens=1200, output_tokens=80),
    )


SCENARIOS = {
    s.name: s
    for s in [
        Scenario(
            "text_reply",
            "a plain text answer: the prompt echo, one message, a result with exit code 0",
            lambda _: [Reply("All done.", Usage(input_tokens=1000, output_tokens=100))],
            args=["--session-id", SESSION_ID],
        ),
        Scenario(
            "create_file",
            "--allow-all-tools: the create tool writes notes.txt, then a final answer",
            lambda project: [
                create_notes(project),
                Reply("Wrote notes.txt.\nDONE", Usage(1300, 20, cache_read_input_tokens=400)),
            ],
            args=["--allow-all-tools"],
        ),
        Scenario(
            "shell_command",
            "--allow-all-tools: a bash call with its output, then a final answer",
            lambda _: [
                ToolCall("bash", {"command": "echo 42", "description": "print 42"}),
                Reply("The command printed 42."),
            ],
            args=["--allow-all-tools"],
        ),
        Scenario(
            "read_only_denied",
            "the plan mode's deny rules refuse the create call (error.code denied)",
            lambda project: [create_notes(project), Reply("I may not write files here.")],
            args=READ_ONLY,
        ),
        Scenario(
            "default_denied",
            "no allow flag: a create call needs approval and nobody can give it",
            lambda project: [create_notes(project), Reply("Nobody approved the write.")],
        ),
        Scenario(
            "bad_request_400",
            "a 400 is not retried: session.error (query, 400) and exit code 1",
            lambda _: [ApiError(400, "invalid_request_error", "Bad request from the mock")],
        ),
        Scenario(
            "rate_limited_429",
            "a 429 retried five times, then session.error (rate_limit, 429) and exit code 1",
            lambda _: (
                [ApiError(429, "rate_limit_exceeded", "Rate limit reached")] * RATE_LIMIT_ATTEMPTS
            ),
        ),
    ]
}
