"""Named real-Codex scenarios, shared by the cassette tests and the cassette recorder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tests.agents.codex.harness import CodexRun, RealCodex
from tests.mockapi import ApiError, Reply, ToolCall, Turn, Usage

ADD_NOTES_PATCH = "*** Begin Patch\n*** Add File: notes.txt\n+hello from the mock\n*** End Patch\n"
CODE_MODE_SCRIPT = "text(await tools.exec_command({cmd: 'echo code > code.txt && echo ok'}));"


@dataclass(frozen=True)
class Scenario:
    """A script for the mock, the CLI arguments and what the run is meant to show."""

    name: str
    shows: str
    turns: Sequence[Turn]
    args: Sequence[str] = ("--sandbox", "workspace-write")
    prompt: str = "Do the task in TASK.md."

    def play(self, codex: RealCodex) -> CodexRun:
        """Load the script and run the CLI once."""
        codex.server.set_script(*self.turns)
        return codex.run(self.prompt, *self.args)


PATCH_NOTES = ToolCall(
    "apply_patch",
    {"input": ADD_NOTES_PATCH},
    text_before="I will add the notes.",
    usage=Usage(input_tokens=1200, output_tokens=80, cache_read_input_tokens=300),
)

SCENARIOS = {
    s.name: s
    for s in [
        Scenario(
            "text_reply",
            "a plain answer: thread.started, turn.started, one agent_message, turn.completed"
            " whose usage counts the cached tokens in input_tokens",
            [Reply("All done.", Usage(input_tokens=1000, output_tokens=100))],
        ),
        Scenario(
            "shell_command",
            "an exec_command call: command_execution item.started/completed (the command"
            " wrapped in /bin/bash -lc), its output and exit code; a file lands",
            [
                ToolCall(
                    "exec_command",
                    {"cmd": "echo hello > hello.txt && cat hello.txt"},
                    text_before="Writing hello.txt.",
                ),
                Reply("Wrote hello.txt.", Usage(input_tokens=1500, output_tokens=20)),
            ],
        ),
        Scenario(
            "apply_patch",
            "a freeform apply_patch call: file_change item.started/completed with the path;"
            " usage of both requests summed in turn.completed",
            [PATCH_NOTES, Reply("Added notes.txt.", Usage(input_tokens=1500, output_tokens=20))],
        ),
        Scenario(
            "code_mode_exec",
            "Codex's default model (gpt-6.1-sol in 0.169.0) offers its tools inside a"
            " JavaScript `exec` tool (an additional_tools input item); a command run from it"
            " is still a command_execution item",
            [
                ToolCall("exec", {"input": CODE_MODE_SCRIPT}, text_before="Running it."),
                Reply("Wrote code.txt.", Usage(input_tokens=1500, output_tokens=20)),
            ],
            args=("--sandbox", "workspace-write", "--model", "gpt-6.1-sol"),
        ),
        Scenario(
            "read_only_denied",
            "--sandbox read-only refuses apply_patch: no item at all on stdout, the refusal"
            " only on stderr (tools::router: error=patch rejected …), exit 0",
            [PATCH_NOTES, Reply("I could not write the file.")],
            args=("--sandbox", "read-only"),
        ),
        Scenario(
            "unauthorized_401",
            "an API error: top-level error and turn.failed 'unexpected status 401"
            " Unauthorized: …', exit 1",
            [ApiError(401, "invalid_request_error", "Incorrect API key provided")],
        ),
        Scenario(
            "bad_request_400",
            "a 400: the error message is the API's JSON error body, exit 1",
            [ApiError(400, "invalid_request_error", "Invalid value for 'input'")],
        ),
        Scenario(
            "server_error_500",
            "a 500 without retries: 'We’re currently experiencing high demand…', exit 1",
            [ApiError(500, "server_error", "The server had an error")],
        ),
        Scenario(
            "server_error_retried",
            "two 500s with stream retries on: each retry is a top-level error 'Reconnecting..."
            " n/m (…)', then the answer; exit 0",
            [ApiError(500, "server_error", "boom"), ApiError(500), Reply("Recovered.")],
            args=(
                "--sandbox",
                "workspace-write",
                "-c",
                "model_providers.mock.stream_max_retries=2",
            ),
        ),
        Scenario(
            "rate_limited_429",
            "a 429 rate_limit_exceeded with retries off: 'exceeded retry limit, last status:"
            " 429 Too Many Requests', exit 1",
            [ApiError(429, "rate_limit_exceeded", "Rate limit reached for requests")],
        ),
        Scenario(
            "usage_limit_429",
            "a 429 usage_limit_reached: 'You’ve hit your usage limit. Try again at <local"
            " time>.', exit 1",
            [ApiError(429, "usage_limit_reached", "The usage limit has been reached")],
        ),
    ]
}
