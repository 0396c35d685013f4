"""What a command agent printed: its final text, the usage its lines report, and its end.

The rules are the command agent's (``agents/command``, docs/agents/command.md); this module is
imported with a run's first line.
"""

from __future__ import annotations

import re
from collections import deque

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.events import AgentEvent, TextChunk
from ralphctl.domain.model import UNNAMED_MODEL, IterationResult, ModelTokens, TokenUsage
from ralphctl.domain.usage_patterns import line_usage

#: How much of the end of stdout the final text keeps.
FINAL_TEXT_CHARS = 64 * 1024
#: How much of the end of stderr an error message quotes.
STDERR_EXCERPT_CHARS = 500

_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_HTTP_STATUS = re.compile(
    r"\b(?:HTTP(?:/[\d.]+)?|status(?: code)?|error code|API error)\s*[:=]?\s*([1-5]\d\d)\b"
    r"|\b([45]\d\d) (?:Too Many Requests|Unauthorized|Forbidden|Bad Request|Internal Server Error"
    r"|Service Unavailable|Bad Gateway|Gateway Timeout|Overloaded)\b",
    re.IGNORECASE,
)
_STATUS_LINES = 5


class CommandOutputParser:
    """Reads a plain-text agent's stdout: its text (the final text), the usage its lines
    report by the patterns, and its end."""

    def __init__(
        self,
        *,
        tokens: re.Pattern[str] | None = None,
        cost: re.Pattern[str] | None = None,
        model: str | None = None,
    ) -> None:
        self._tokens_pattern = tokens
        self._cost_pattern = cost
        self._counts_usage = tokens is not None or cost is not None
        self._model = model
        self._lines: deque[str] = deque()
        self._chars = 0
        self._tokens: dict[str | None, TokenUsage] = {}
        self._cost: float | None = None

    def feed(self, line: bytes) -> list[AgentEvent]:
        text = plain_text(line)
        if self._counts_usage and self._usage(text):
            return []
        # the final text, its oldest lines dropped beyond FINAL_TEXT_CHARS
        text = text[-FINAL_TEXT_CHARS:]
        self._lines.append(text)
        self._chars += len(text) + 1
        while self._chars > FINAL_TEXT_CHARS + 1:
            self._chars -= len(self._lines.popleft()) + 1
        return [TextChunk(text)] if text and not text.isspace() else []

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        failed = outcome.exit_code not in (0, None) or outcome.timed_out or outcome.interrupted
        named = [model for model in self._tokens if model is not None]
        return IterationResult(
            final_text="\n".join(self._lines),
            is_error=failed,
            error_message=_error_message(outcome),
            exit_code=outcome.exit_code,
            duration_ms=outcome.duration_ms,
            tokens=sum(self._tokens.values(), TokenUsage()),
            cost_usd=self._cost,
            api_error_status=self._http_status(outcome) if failed else None,
            stderr_tail=outcome.stderr_tail,
            timed_out=outcome.timed_out,
            interrupted=outcome.interrupted,
            model=self._model or (named[-1] if named else None),
            model_tokens=self._model_tokens() if named else (),
        )

    def _http_status(self, outcome: ProcessOutcome) -> int | None:
        """The HTTP status a failed command states last in stderr, else in its text."""
        return _http_status(outcome.stderr_tail) or _http_status("\n".join(self._lines))

    def _model_tokens(self) -> tuple[ModelTokens, ...]:
        """The tokens per model, once a line named one (unnamed lines' stay unpriced)."""
        return tuple(
            ModelTokens(model or UNNAMED_MODEL, tokens) for model, tokens in self._tokens.items()
        )

    def _usage(self, text: str) -> bool:
        """Count the usage ``text`` reports, if it reports any."""
        usage = line_usage(text, self._tokens_pattern, self._cost_pattern)
        if usage is None:
            return False
        model = usage.model or self._model
        counted = TokenUsage(**usage.tokens)
        self._tokens[model] = self._tokens.get(model, TokenUsage()) + counted
        if usage.cost_usd is not None:
            self._cost = (self._cost or 0.0) + usage.cost_usd
        return True


def plain_text(line: bytes) -> str:
    """A line of output as text: invalid UTF-8 replaced, terminal escape sequences removed,
    and of a line redrawn with ``\\r`` (a progress bar) what it last showed."""
    text = line.decode("utf-8", errors="replace")
    if "\r" in text:
        text = text.rstrip("\r").rpartition("\r")[2]
    return _ESCAPES.sub("", text) if "\x1b" in text else text


def _error_message(outcome: ProcessOutcome) -> str | None:
    """Why the run counts as an error, in words; None when it does not."""
    problems: list[str] = []
    if outcome.timed_out:
        problems.append("timed out: the agent was stopped at the iteration timeout")
    if outcome.interrupted:
        problems.append("interrupted: the agent was stopped on request")
    code = outcome.exit_code
    if code and not problems:  # a stopped agent's status is the stop's
        exited = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        problems.append(f"the agent {exited}")
    if not problems:
        return None
    excerpt = outcome.stderr_tail.strip()[-STDERR_EXCERPT_CHARS:]
    return "; ".join(problems) + (f"; stderr: {excerpt}" if excerpt else "")


def _http_status(text: str) -> int | None:
    """The HTTP status stated on the last lines of ``text``, if any."""
    lines = [line for line in text[-FINAL_TEXT_CHARS:].splitlines() if line.strip()]
    lines = lines[-_STATUS_LINES:]
    for line in reversed(lines):
        if found := _HTTP_STATUS.search(line):
            return int(found.group(1) or found.group(2))
    return None
