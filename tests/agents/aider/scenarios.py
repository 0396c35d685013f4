"""Named real-CLI scenarios for Aider, shared by the tests and by the cassette recorder."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tests.agents.aider.harness import PRICED_MODEL, AiderRun, RealAider
from tests.mockapi import ApiError, Reply, Turn, Usage

#: A reply in Aider's ``whole`` edit format (its default for an unknown model): the file's
#: path, then its whole content fenced.
CREATE_NOTES = (
    "I will create the notes.\n\nnotes.txt\n```\nhello from the mock\n```\n\n"
    "<promise>COMPLETE</promise>"
)
#: Aider retries a 429 for about 64 s of back-off (0.25 s doubling to 32 s), three requests
#: per attempt (the OpenAI client retries twice itself): 9 attempts, 27 requests.
RATE_LIMIT_REQUESTS = 27


@dataclass(frozen=True)
class Scenario:
    """A script for the mock, Aider's arguments and what the run is meant to show."""

    name: str
    shows: str
    turns: Sequence[Turn]
    args: Sequence[str] = ()
    prompt: str = "Create notes.txt.\n<promise>COMPLETE</promise> when it is done."
    env: Mapping[str, str] = field(default_factory=dict)

    def play(self, aider: RealAider) -> AiderRun:
        aider.server.set_script(*self.turns)
        return aider.run(self.prompt, *self.args, env=self.env)


SCENARIOS = {
    s.name: s
    for s in [
        Scenario(
            "text_reply",
            "a plain answer: the announcements, the reply, its Tokens line; no prompt echo",
            [Reply("All done.\nDONE", Usage(input_tokens=1000, output_tokens=100))],
        ),
        Scenario(
            "create_file",
            "a whole-format reply: Aider creates notes.txt and says 'Applied edit to notes.txt'",
            [Reply(CREATE_NOTES, Usage(input_tokens=1200, output_tokens=80))],
        ),
        Scenario(
            "dry_run",
            "--dry-run (plan mode): 'Did not apply edit to notes.txt (--dry-run)'",
            [Reply(CREATE_NOTES, Usage(input_tokens=1200, output_tokens=80))],
            args=["--dry-run"],
        ),
        Scenario(
            "priced_reply",
            "a model in litellm's price table: the Tokens line ends with the cost in USD",
            [Reply("Priced.", Usage(input_tokens=2000, output_tokens=500))],
            env={"AIDER_MODEL": f"openai/{PRICED_MODEL}"},
        ),
        Scenario(
            "bad_request_400",
            "a 400 is not retried: one 'litellm.BadRequestError' line, and still exit code 0",
            [ApiError(400, "invalid_request_error", "Bad request from the mock")],
        ),
        Scenario(
            "auth_401",
            "a 401 is not retried: 'litellm.AuthenticationError' and Aider's explanation",
            [ApiError(401, "invalid_api_key", "Incorrect API key provided")],
        ),
        Scenario(
            "rate_limited_429",
            "a 429 retried with back-off until Aider gives up (about 80 s), then exit code 0",
            [ApiError(429, "rate_limit_exceeded", "Rate limit reached")] * RATE_LIMIT_REQUESTS,
        ),
    ]
}
