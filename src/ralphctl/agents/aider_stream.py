"""Aider's plain-text output (``--no-pretty --no-stream``, 0.86.2) into events and a result.

What Aider prints, in order: its announcements (``Aider v0.86.2``, ``Model: openai/gpt-4.1 with
whole edit format``, ``Git repo: …``, ``Repo-map: …``, maybe ``Added X to the chat.`` and a
release-notes link), then for each reply of the model its text as the model wrote it, then
``Tokens: 1.2k sent, 80 received.`` (and ``Cost: $0.01 message, $0.02 session.`` when the model
has a price in litellm's table), then what it did with the reply (``Applied edit to FILE``,
``Did not apply edit to FILE (--dry-run)``). A reply that needs fixing (edit format, lint)
is followed by another. An API failure is a line ``litellm.RateLimitError: …`` with, if Aider
retries it, ``Retrying in 0.5 seconds...``; after its last retry Aider still exits 0. The
prompt is not echoed.

So the final text is the text of the last reply that Aider closed with its ``Tokens:`` line;
lines Aider prints itself (announcements, edit reports, retries, errors, confirmations) are
never text. After an API failure that no reply followed, the run is an error and its text is
the failure's lines (where a limit message would stand). Tokens are read from the analytics
log when the adapter asked for one (exact counts and cost of each reply), else from the
``Tokens:`` lines (rounded to 0.1k above 1,000). Aider's ``sent`` counts every prompt token,
cached ones included (the OpenAI API reports no split to it): they are all input here.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.events import (
    AgentEvent,
    ApiRetry,
    PermissionDenied,
    RawLine,
    TextChunk,
    ToolCall,
    ToolOutput,
    printable,
)
from ralphctl.domain.model import (
    IterationResult,
    ModelTokens,
    PermissionDenial,
    TokenUsage,
    ToolUse,
)

#: litellm's exception names (Aider prints ``litellm.<Name>: …``) as HTTP statuses.
ERROR_STATUS = {
    "AuthenticationError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
    "RateLimitError": 429,
    "BadRequestError": 400,
    "ContextWindowExceededError": 400,
    "ContentPolicyViolationError": 400,
    "UnsupportedParamsError": 400,
    "InvalidRequestError": 400,
    "UnprocessableEntityError": 422,
    "InternalServerError": 500,
    "BadGatewayError": 502,
    "ServiceUnavailableError": 503,
}
#: The same as the neutral assistant errors ``domain/analyzer`` knows.
ERROR_KINDS = {"RateLimitError": "rate_limit", "AuthenticationError": "authentication_failed"}
EDIT_TOOL = "edit"
MAX_USAGE_LOG_BYTES = 4 * 1024 * 1024
FINAL_TEXT_LINES = 2000

_MAX_TOOL_USES = 200
_MAX_ERROR_LINES = 5
_TOKEN_COUNT = r"([\d.]+)(k?)"
_TOKENS = re.compile(
    rf"Tokens: {_TOKEN_COUNT} sent(?:, {_TOKEN_COUNT} cache write)?(?:, {_TOKEN_COUNT} cache hit)?"
    rf", {_TOKEN_COUNT} received\.(?: Cost: \$([\d.]+) message, \$([\d.]+) session\.)?"
)
_COST = re.compile(r"Cost: \$([\d.]+) message, \$([\d.]+) session\.")
_VERSION = re.compile(r"Aider v(\d+\.\d+\.\d+\S*)")
_MODEL = re.compile(r"(?:Main model|Model): (\S+) with .*")
_APPLIED = re.compile(r"Applied edit to (.+)")
_DRY_RUN = re.compile(r"Did not apply edit to (.+) \(--dry-run\)")
_ERROR = re.compile(r"litellm\.(\w+): (.*)")
_RETRY = re.compile(r"Retrying in [\d.]+ seconds\.\.\.")
#: How the lines Aider prints itself around the replies begin: never the model's text.
_AIDER_PREFIXES = (
    "Aider v",
    "Model: ",
    "Main model: ",
    "Weak model: ",
    "Editor model: ",
    "Git repo: ",
    "Repo-map: ",
    "Added .aider* to .gitignore",
    "Git repository created",
    "Update git name with",
    "Update git email with",
    "https://aider.chat/",
    "Use /help ",
    "Cur working dir: ",
    "Warning: ",
    "HTTPSConnectionPool(",
    "Restored previous conversation history",
    "The API provider ",
    "Skipping edits to ",
    "Creating empty file ",
    "Unable to create ",
    "Unable to read ",
    "The LLM did not conform to the edit format",
    "Can't initialize prompt toolkit",
)
_ADDED_TO_CHAT = re.compile(r"Added \S.* to the chat\.?")
_CONFIRMATION = "? (Y)es/(N)o"


@dataclass(frozen=True, slots=True)
class _Usage:
    tokens: TokenUsage
    cost_usd: float | None


class AiderStreamParser:
    """Turns Aider's output lines into events and a result; never raises on bad input.

    ``usage_log``: the run's analytics log (``--analytics-log``), read and deleted when the run
    ends; without one, tokens come from the ``Tokens:`` lines. Memory stays bounded: the text of
    the reply being read (its last 2000 lines), of the last closed reply, the last error lines
    and at most 200 edits.
    """

    def __init__(self, usage_log: Path | None = None) -> None:
        self._usage_log = usage_log
        self._reply: deque[str] = deque(maxlen=FINAL_TEXT_LINES)
        self._final: str | None = None
        self._error_lines: list[str] = []
        self._error_name: str | None = None
        self._error_open = False  # the lines that follow are still the failure's message
        self._retries = 0
        self._shown: list[_Usage] = []
        self._model: str | None = None
        self._version: str | None = None
        self._tool_uses: list[ToolUse] = []
        self._denials: list[PermissionDenial] = []
        self._edits = 0

    def feed(self, line: bytes) -> list[AgentEvent]:
        text = line.decode("utf-8", "replace")  # positional: cheaper, on every line
        if text.endswith("\r"):
            text = text.rstrip("\r")
        if not text.isprintable():
            text = printable(text)
        read = _READ.get(text[:4])
        if read is not None and text.startswith(read[0]) and (match := read[1].fullmatch(text)):
            return read[2](self, match)
        blank = not text or text.isspace()
        if self._error_open:
            if not blank:
                self._note_error_line(text)  # the message wrapped, or explained by Aider
                return [RawLine(text)]
            self._error_open = False
        if _is_aiders(text):
            return [RawLine(text)]
        if blank and not self._reply:
            return []
        self._reply.append(text)
        return [TextChunk(text + "\n", True)]  # a delta (positional: a third cheaper)

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        logged = read_usage_log(self._usage_log)
        failed = self._error_name is not None
        is_error = (
            failed or outcome.exit_code not in (0, None) or outcome.timed_out or outcome.interrupted
        )
        usage = logged or self._shown
        tokens = sum((u.tokens for u in usage), TokenUsage())
        costs = [u.cost_usd for u in usage]
        priced = bool(self._shown) and all(u.cost_usd is not None for u in self._shown)
        model = self._model
        return IterationResult(
            final_text="\n".join(self._error_lines) if failed else (self._final or ""),
            is_error=is_error,
            error_message=self._error_message(outcome) if is_error else None,
            exit_code=outcome.exit_code,
            duration_ms=outcome.duration_ms,
            tokens=tokens,
            cost_usd=sum(c or 0.0 for c in costs) if priced and costs else None,
            num_turns=len(usage) or None,
            api_error_status=ERROR_STATUS.get(self._error_name or ""),
            permission_denials=tuple(self._denials),
            stderr_tail=outcome.stderr_tail,
            timed_out=outcome.timed_out,
            interrupted=outcome.interrupted,
            agent_version=self._version,
            model=model,
            model_tokens=(ModelTokens(model, tokens),) if model and usage else (),
            tool_uses=tuple(self._tool_uses),
            assistant_error=ERROR_KINDS.get(self._error_name or "", self._error_name),
            truncated=outcome.exit_code is None or outcome.exit_code < 0,
        )

    # --- one handler per kind of line Aider prints -----------------------------------------

    def _tokens(self, match: re.Match[str]) -> list[AgentEvent]:
        """A reply ends: it is the final text so far, and any earlier failure is over."""
        sent, write, hit, received = (
            _count(match.group(i), match.group(i + 1)) for i in (1, 3, 5, 7)
        )
        cost = float(match.group(9)) if match.group(9) else None
        self._shown.append(_Usage(TokenUsage(sent, received, hit, write), cost))
        self._final = "\n".join(self._reply).strip("\n")
        self._reply.clear()
        self._error_name, self._error_lines = None, []
        return [RawLine(match.group(0))]

    def _cost(self, match: re.Match[str]) -> list[AgentEvent]:
        """The cost of the reply just closed, on a line of its own (after cache counts)."""
        if self._shown:
            self._shown[-1] = _Usage(self._shown[-1].tokens, float(match.group(1)))
        return [RawLine(match.group(0))]

    def _applied(self, match: re.Match[str]) -> list[AgentEvent]:
        call = self._edit(match.group(1))
        return [call, ToolOutput(call.tool_use_id)]

    def _not_applied(self, match: re.Match[str]) -> list[AgentEvent]:
        call = self._edit(match.group(1))
        detail = f"not applied to {call.summary}: --dry-run (read-only mode)"
        self._denials.append(PermissionDenial(EDIT_TOOL, call.tool_use_id, detail))
        del self._denials[:-_MAX_TOOL_USES]
        return [call, PermissionDenied(EDIT_TOOL, detail, call.tool_use_id)]

    def _api_error(self, match: re.Match[str]) -> list[AgentEvent]:
        self._reply.clear()  # a reply cut short by the failure is no answer
        self._error_name = match.group(1)
        self._error_lines = []
        self._error_open = True
        self._note_error_line(match.group(0))
        return [RawLine(match.group(0))]

    def _retry(self, match: re.Match[str]) -> list[AgentEvent]:
        self._retries += 1
        self._error_open = False
        status = ERROR_STATUS.get(self._error_name or "")
        return [RawLine(match.group(0)), ApiRetry(self._retries, None, status, self._error_name)]

    def _version_line(self, match: re.Match[str]) -> list[AgentEvent]:
        self._version = match.group(1)
        return [RawLine(match.group(0))]

    def _model_line(self, match: re.Match[str]) -> list[AgentEvent]:
        self._model = self._model or match.group(1)  # the first is the main model
        return [RawLine(match.group(0))]

    # --- helpers ---------------------------------------------------------------------------

    def _edit(self, path: str) -> ToolCall:
        self._edits += 1
        call = ToolCall(EDIT_TOOL, f"aider-edit-{self._edits}", path.strip(), edits_files=True)
        if len(self._tool_uses) < _MAX_TOOL_USES:
            self._tool_uses.append(ToolUse(call.name, call.summary, True, call.tool_use_id))
        return call

    def _note_error_line(self, text: str) -> None:
        if len(self._error_lines) < _MAX_ERROR_LINES and not _RETRY.fullmatch(text):
            self._error_lines.append(text)

    def _error_message(self, outcome: ProcessOutcome) -> str:
        problems: list[str] = []
        if outcome.timed_out:
            problems.append("timed out: the agent was stopped at the iteration timeout")
        if outcome.interrupted:
            problems.append("interrupted: the agent was stopped on request")
        if self._error_name is not None:
            status = ERROR_STATUS.get(self._error_name)
            where = f"API error status {status}, " if status is not None else ""
            said = self._error_lines[0] if self._error_lines else self._error_name
            problems.append(f"the agent reported an error: {where}{said[:300]}")
        elif outcome.exit_code not in (0, None):
            tail = outcome.stderr_tail.strip()[-500:]
            problems.append(
                f"the agent exited with code {outcome.exit_code}"
                + (f"; stderr tail: {tail}" if tail else "")
            )
        return "; ".join(problems) or "the agent reported an error"


_Handler = Callable[["AiderStreamParser", re.Match[str]], list[AgentEvent]]
#: The lines the parser reads, by how they begin (each its own first four characters): the
#: pattern the whole line must match, and its handler.
_READ: dict[str, tuple[str, re.Pattern[str], _Handler]] = {
    prefix[:4]: (prefix, pattern, handler)
    for prefix, pattern, handler in (
        ("Tokens: ", _TOKENS, AiderStreamParser._tokens),
        ("Cost: $", _COST, AiderStreamParser._cost),
        ("Applied edit to ", _APPLIED, AiderStreamParser._applied),
        ("Did not apply edit to ", _DRY_RUN, AiderStreamParser._not_applied),
        ("litellm.", _ERROR, AiderStreamParser._api_error),
        ("Retrying in ", _RETRY, AiderStreamParser._retry),
        ("Aider v", _VERSION, AiderStreamParser._version_line),
        ("Model: ", _MODEL, AiderStreamParser._model_line),
        ("Main model: ", _MODEL, AiderStreamParser._model_line),
    )
}


def _is_aiders(text: str) -> bool:
    """A line Aider prints itself (announcements, reports, confirmations)."""
    return (
        text.startswith(_AIDER_PREFIXES)
        or _CONFIRMATION in text
        or (text.startswith("Added ") and _ADDED_TO_CHAT.fullmatch(text) is not None)
    )


def read_usage_log(path: Path | None) -> list[_Usage] | None:
    """The exact usage of each reply from Aider's analytics log (``message_send`` events),
    which is then deleted; None when there is no log to read."""
    if path is None:
        return None
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_USAGE_LOG_BYTES + 1)
    except OSError:
        return None
    finally:
        path.unlink(missing_ok=True)
    if len(raw) > MAX_USAGE_LOG_BYTES:
        return None
    usage: list[_Usage] = []
    for line in raw.splitlines():
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(event, dict) or event.get("event") != "message_send":
            continue
        properties = event.get("properties")
        if isinstance(properties, dict):
            tokens = TokenUsage(
                input=_whole(properties.get("prompt_tokens")),
                output=_whole(properties.get("completion_tokens")),
            )
            cost = properties.get("cost")
            usd = (
                float(cost)
                if isinstance(cost, int | float) and not isinstance(cost, bool)
                else None
            )
            usage.append(_Usage(tokens, usd))
    return usage


def _count(number: str | None, thousands: str | None) -> int:
    """A token count as Aider shows it: ``950``, ``1.2k``, ``12k``."""
    if not number:
        return 0
    try:
        value = float(number)
    except ValueError:
        return 0
    return round(value * 1000) if thousands else round(value)


def _whole(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
