"""Named real-Gemini-CLI scenarios, shared by the cassette tests and the cassette recorder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tests.agents.gemini.harness import GeminiRun, RealGemini
from tests.mockapi import ApiError, Reply, ToolCall, Turn, Usage

SESSION_ID = "5e55a1d0-0000-4000-8000-00000000a11e"
MODEL = "gemini-2.5-flash"  # a model named: no routing call
QUOTA_MESSAGE = "Resource has been exhausted (e.g. check quota)."


@dataclass(frozen=True)
class Scenario:
    """A script for the mock, the CLI arguments and what the run is meant to show."""

    name: str
    shows: str
    turns: Sequence[Turn]
    args: Sequence[str] = ("--approval-mode", "auto_edit")
    prompt: str = "Do the task in TASK.md."

    def play(self, gemini: RealGemini) -> GeminiRun:
        """Load the script and run the CLI once."""
        gemini.server.set_script(*self.turns)
        return gemini.run(self.prompt, *self.args)


WRITE_NOTES = ToolCall(
    "write_file",
    {"file_path": "notes.txt", "content": "hello from the mock\n"},
    text_before="I will write the notes.",
    usage=Usage(input_tokens=1200, output_tokens=80, cache_read_input_tokens=300),
)

SCENARIOS = {
    s.name: s
    for s in [
        Scenario(
            "text_reply",
            "a plain answer under auto routing: init (model auto), the prompt echoed as a user"
            " message, assistant deltas, a success result whose stats name the routed model"
            " and the router's (0 tokens)",
            [Reply("All done.", Usage(input_tokens=1000, output_tokens=100))],
        ),
        Scenario(
            "write_file",
            "text, a write_file tool_use and its tool_result (no output), the final text;"
            " notes.txt lands; stats sum both requests, cached tokens apart",
            [WRITE_NOTES, Reply("Wrote notes.txt.", Usage(input_tokens=1500, output_tokens=20))],
            args=("--approval-mode", "auto_edit", "--session-id", SESSION_ID),
        ),
        Scenario(
            "plan_mode_denied",
            "plan mode refuses write_file by policy: tool_result status error, error.type"
            " policy_violation; the run goes on and succeeds (exit 0)",
            [WRITE_NOTES, Reply("I could not write the file.")],
            args=("--approval-mode", "plan"),
        ),
        Scenario(
            "default_mode_shell",
            "default mode headless offers no shell: run_shell_command comes back as"
            " tool_not_registered",
            [ToolCall("run_shell_command", {"command": "touch x.txt"}), Reply("No shell.")],
            args=("--approval-mode", "default"),
        ),
        Scenario(
            "server_error_500",
            "a 500 (one attempt): result status error, the Google error JSON in the message,"
            " exit 244 (500 modulo 256)",
            [ApiError(500, "INTERNAL", "Internal error encountered.")],
            args=("--approval-mode", "auto_edit", "--model", MODEL),
        ),
        Scenario(
            "overloaded_503",
            "a 503 (one attempt): result status error with the bare message, exit 247",
            [ApiError(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")],
            args=("--approval-mode", "auto_edit", "--model", MODEL),
        ),
        Scenario(
            "rate_limited_429",
            "a 429 RESOURCE_EXHAUSTED with RetryInfo 1s (one attempt): result status error,"
            " 'Suggested retry after 1s.' in the message, exit 173 (429 modulo 256)",
            [ApiError(429, "RESOURCE_EXHAUSTED", QUOTA_MESSAGE)],
            args=("--approval-mode", "auto_edit", "--model", MODEL),
        ),
    ]
}
