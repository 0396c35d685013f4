"""Named real-OpenCode scenarios, shared by the cassette recorder and the tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tests.agents.opencode.harness import OpencodeRun, RealOpencode
from tests.mockapi import ApiError, Reply, ToolCall, Turn, Usage

#: opencode makes its first request and then retries five times.
ATTEMPTS = 6


@dataclass(frozen=True)
class Scenario:
    """A script for the mock, the CLI arguments and environment, and what the run shows."""

    name: str
    shows: str
    turns: Sequence[Turn]
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    prompt: str = "Do the task in TASK.md."

    def play(self, opencode: RealOpencode) -> OpencodeRun:
        """Load the script and run the CLI once."""
        opencode.server.set_script(*self.turns)
        return opencode.run(self.prompt, *self.args, env=self.env)


WRITE_NOTES = ToolCall(
    "write",
    {"filePath": "notes.txt", "content": "hello from the mock\n"},
    text_before="I will write the notes.",
    usage=Usage(input_tokens=1200, output_tokens=80, cache_read_input_tokens=300),
)

SCENARIOS = {
    s.name: s
    for s in [
        Scenario(
            "text_reply",
            "a plain answer: step_start, text, step_finish (reason stop) with the tokens and"
            " the cost of the configured prices",
            [Reply("All done.", Usage(input_tokens=1000, output_tokens=100))],
        ),
        Scenario(
            "write_file",
            "a write call: the text before it, tool_use (completed, write), step_finish"
            " (reason tool-calls), then a second step with the final text; a file lands",
            [WRITE_NOTES, Reply("Wrote notes.txt.", Usage(input_tokens=1500, output_tokens=20))],
        ),
        Scenario(
            "bash_command",
            "a bash call: tool_use with the command's output in state.output",
            [
                ToolCall(
                    "bash",
                    {
                        "command": "echo hello > hello.txt && cat hello.txt",
                        "description": "Write hello.txt",
                    },
                ),
                Reply("Wrote hello.txt.", Usage(input_tokens=1500, output_tokens=20)),
            ],
        ),
        Scenario(
            "plan_denied_write",
            "--agent plan refuses write by rule: tool_use with status error ('The user has"
            " specified a rule which prevents you…'); the run goes on to a final answer, exit 0",
            [WRITE_NOTES, Reply("I could not write the file.")],
            args=("--agent", "plan"),
        ),
        Scenario(
            "ask_rejected_bash",
            "a bash rule 'ask' is auto-rejected headless: tool_use with status error ('The user"
            " rejected permission…'), the run stops after that step, exit 0, stderr warns",
            [
                ToolCall("bash", {"command": "echo hi > b.txt", "description": "Write b.txt"}),
                Reply("Not reached."),
            ],
            env={"OPENCODE_PERMISSION": '{"bash":"ask"}'},
        ),
        Scenario(
            "unauthorized_401",
            "an API error that is not retried: one error line (APIError, statusCode 401), exit 1",
            [ApiError(401, "invalid_api_key", "Incorrect API key provided")],
        ),
        Scenario(
            "rate_limited_429",
            "a 429 on every attempt: opencode retries five times (retry-after 0), then one"
            " error line (statusCode 429, isRetryable, responseHeaders), exit 1",
            [ApiError(429, "rate_limit_exceeded", "Rate limit reached for requests")] * ATTEMPTS,
        ),
    ]
}
