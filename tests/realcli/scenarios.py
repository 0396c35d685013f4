"""Named real-CLI scenarios, shared by the tests and by the cassette recorder."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tests.mockapi import ApiError, Reply, ToolCall, Turn, Usage
from tests.realcli.harness import ClaudeRun, RealClaude

SESSION_ID = "5e55a1d0-0000-4000-8000-00000000c0de"
STOP_HOOK = (
    "if [ -e .blocked-once ]; then exit 0; fi; touch .blocked-once; "
    'echo \'{"decision":"block","reason":"Keep going: the tests still fail."}\''
)


@dataclass(frozen=True)
class Scenario:
    """A script for the mock, the CLI arguments and what the run is meant to show."""

    name: str
    shows: str
    turns: Sequence[Turn]
    args: Sequence[str] = ()
    prompt: str = "Do the task in TASK.md."
    env: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)

    def play(self, claude: RealClaude) -> ClaudeRun:
        """Load the script, write the files into the project, run the CLI once."""
        claude.server.set_script(*self.turns)
        for relative, content in self.files.items():
            target = claude.project / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
        return claude.run(self.prompt, *self.args, env=self.env)


WRITE_NOTES = ToolCall(
    "Write",
    {"file_path": "notes.txt", "content": "hello from the mock\n"},
    text_before="I will write the notes.",
    usage=Usage(input_tokens=1200, output_tokens=80),
)

SCENARIOS = {
    s.name: s
    for s in [
        Scenario(
            "text_reply",
            "a plain text answer: init, one assistant line, a success result with the cost",
            [Reply("All done.", Usage(input_tokens=1000, output_tokens=100))],
        ),
        Scenario(
            "session_id",
            "--session-id is used as the session_id of every line",
            [Reply("Hello.")],
            args=["--session-id", SESSION_ID],
        ),
        Scenario(
            "write_accept_edits",
            "text + tool_use sharing one message.id, the Write tool_result, a final text;"
            " notes.txt exists afterwards",
            [WRITE_NOTES, Reply("Wrote notes.txt.", Usage(input_tokens=1500, output_tokens=20))],
            args=["--permission-mode", "acceptEdits"],
        ),
        Scenario(
            "bash_allowed",
            "a Bash tool call allowed with --allowedTools; its output in the tool_result",
            [ToolCall("Bash", {"command": "echo hello", "description": "Say hello"}), Reply("ok")],
            args=["--allowedTools", "Bash"],
        ),
        Scenario(
            "permission_denied_write",
            "default mode in -p denies Write: system/permission_denied, an error tool_result,"
            " result.permission_denials, exit 0",
            [WRITE_NOTES, Reply("I could not write the file.")],
        ),
        Scenario(
            "overloaded_529",
            "an API error: synthetic assistant line, result is_error true with"
            " api_error_status 529 (subtype still success), exit 1",
            [ApiError(529, "overloaded_error", "Overloaded")],
        ),
        Scenario(
            "rate_limited_429",
            "a 429 rate_limit_error with an API key: is_error, api_error_status 429, exit 1"
            " (no rate_limit_event: that needs a subscription login)",
            [ApiError(429, "rate_limit_error", "This request would exceed your rate limit")],
        ),
        Scenario(
            "overloaded_then_retry",
            "one retry: a system/api_retry line, then a normal answer (each HTTP request"
            " consumes a script turn)",
            [ApiError(529), Reply("Recovered.")],
            env={"CLAUDE_CODE_MAX_RETRIES": "1"},
        ),
        Scenario(
            "max_budget_exceeded",
            "--max-budget-usd 0.01 at $0.006 per request: once the total reaches the budget"
            " (0.012 after the 2nd answer) the run ends before that tool call runs: subtype"
            " error_max_budget_usd, is_error, terminal_reason budget_exhausted, errors[],"
            " no result text, exit 1",
            [ToolCall("Bash", {"command": f"echo {n}"}) for n in range(3)],
            args=["--allowedTools", "Bash", "--max-budget-usd", "0.01"],
        ),
        Scenario(
            "stop_hook_block_once",
            "a project Stop hook blocks once: hook_started/hook_response lines, a user line"
            " 'Stop hook feedback:\\n…', a second answer, then the hook allows the stop",
            [Reply("First try."), Reply("Second try.")],
            args=["--include-hook-events"],
            files={
                ".claude/settings.json": json.dumps(
                    {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": STOP_HOOK}]}]}}
                )
            },
        ),
    ]
}
