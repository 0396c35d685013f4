"""The command agent: any CLI that takes a prompt and prints text, one process per iteration.

User guide: docs/agents/command.md. The rules:

- ``agent_command`` is split as a shell would split it (``shlex``: quotes, no expansion, no
  pipes); the loop's ``extra_args`` follow it. A relative program path is relative to the
  loop's work dir, where the command runs.
- The prompt goes on stdin, unless an argument names ``{prompt}`` (the prompt itself, refused
  above ``MAX_ARGV_PROMPT_BYTES``: arguments are visible to every user and limited in size) or
  ``{prompt_file}`` (a private file holding it, written before the spawn and deleted after it:
  ``process.prompt_file``); stdin is then empty. Both are replaced in one pass, so a prompt
  that mentions a placeholder is never substituted again.
- The final text is the command's stdout as text: escape sequences removed, a line redrawn
  with ``\\r`` read as it was left, the lines a usage pattern matches left out, and only the
  last ``FINAL_TEXT_CHARS`` kept. The engine judges the completion marker there by its strict
  rules (docs/completion.md): a plain marker counts only as the last non-empty line and a tag
  on a line that echoes the prompt is ignored, so a CLI that echoes its prompt before its
  answer cannot end the loop with the prompt's words. stderr is never the agent's text.
- Exit status 0 is success; any other status, a timeout or an interrupt is an error, its
  message ending with the end of stderr. On a failed run, an HTTP status stated on the last
  lines of stderr, else of stdout (``HTTP 429``, ``status code 401``, ``API Error: 529``,
  ``429 Too Many Requests``) becomes ``api_error_status``, so that a rate limit parks the
  loop and an auth error stops it as with every other agent.
- Tokens and cost come from the optional patterns ``agent_tokens_regex`` and
  ``agent_cost_regex`` (``domain/usage_patterns``: every matching line counts, summed). Tokens
  without a cost are priced by model: the tokens pattern's ``model`` group, else the loop's
  ``model``.
- It has no permission modes (``Capabilities.permission_modes`` is empty): what the command may
  do is its own flags' business, and the loop's ``permission_mode`` is not passed to it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections import deque
from collections.abc import Mapping

from ralphctl.agents.base import (
    AgentCommand,
    AgentRequest,
    AgentUnavailable,
    Capabilities,
    ProcessOutcome,
)
from ralphctl.agents.events import AgentEvent, TextChunk
from ralphctl.agents.spec import AgentSpec
from ralphctl.domain.costs import UNNAMED_MODEL
from ralphctl.domain.model import IterationResult, ModelTokens, TokenUsage
from ralphctl.domain.usage_patterns import cost_pattern, line_usage, tokens_pattern

PROMPT = "{prompt}"
PROMPT_FILE = "{prompt_file}"
#: The largest prompt given as an argument (``{prompt}``); a larger one needs ``{prompt_file}``.
MAX_ARGV_PROMPT_BYTES = 8 * 1024
#: How much of the end of stdout the final text keeps.
FINAL_TEXT_CHARS = 64 * 1024
#: How much of the end of stderr an error message quotes.
STDERR_EXCERPT_CHARS = 500
CAPABILITIES = Capabilities(fresh=True)

_PLACEHOLDER = re.compile(r"\{prompt(?:_file)?\}")
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_HTTP_STATUS = re.compile(
    r"\b(?:HTTP(?:/[\d.]+)?|status(?: code)?|error code|API error)\s*[:=]?\s*([1-5]\d\d)\b"
    r"|\b([45]\d\d) (?:Too Many Requests|Unauthorized|Forbidden|Bad Request|Internal Server Error"
    r"|Service Unavailable|Bad Gateway|Gateway Timeout|Overloaded)\b",
    re.IGNORECASE,
)
_STATUS_LINES = 5


class PromptTooLong(AgentUnavailable, ValueError):
    """The prompt is too big to be given as an argument: the command must take it otherwise.

    A ValueError for ``--dry-run`` (a setting the adapter refuses), and AgentUnavailable for a
    running loop, which then stops with the reason rather than crash."""


class CommandAdapter:
    """Runs ``agent_command`` once per iteration (see the module for the rules)."""

    name: str = "command"

    def __init__(
        self,
        command: str,
        *,
        tokens_regex: str | None = None,
        cost_regex: str | None = None,
        model: str | None = None,
    ) -> None:
        try:
            self.argv = tuple(shlex.split(command))
        except ValueError as exc:
            raise ValueError(f"agent_command cannot be split into arguments: {exc}") from None
        if not self.argv:
            raise ValueError("agent_command is empty: give the command line of the agent to run")
        self.tokens = tokens_pattern(tokens_regex) if tokens_regex else None
        self.cost = cost_pattern(cost_regex) if cost_regex else None
        self.model = model
        self.capabilities = Capabilities(
            fresh=True, reports_cost=self.cost is not None, reports_tokens=self.tokens is not None
        )

    def check_available(self) -> None:
        """AgentUnavailable when the program is not found (a path relative to the work dir is
        checked when it runs)."""
        program = self.argv[0]
        if os.sep in program and not os.path.isabs(program):
            return
        if shutil.which(program) is None:
            raise AgentUnavailable(
                f"command agent: {program!r} is not an executable file or a command on PATH; "
                "check agent_command (--agent-command)"
            )

    def build_command(self, request: AgentRequest) -> AgentCommand:
        """The argv with its placeholders replaced, the prompt on stdin or in a file."""
        args = [*self.argv, *request.extra_args]
        named = {found for arg in args for found in _PLACEHOLDER.findall(arg)}
        size = len(request.prompt.encode("utf-8"))
        if PROMPT in named and size > MAX_ARGV_PROMPT_BYTES:
            raise PromptTooLong(
                f"the prompt ({size} bytes) is too long for {PROMPT} (at most "
                f"{MAX_ARGV_PROMPT_BYTES} bytes): use {PROMPT_FILE} in agent_command, or leave "
                "both out to give it on stdin"
            )
        if PROMPT_FILE in named and request.prompt_path is None:
            raise ValueError(f"{PROMPT_FILE}: no prompt file is available for this run")
        values = {PROMPT: request.prompt, PROMPT_FILE: str(request.prompt_path)}
        argv = [_PLACEHOLDER.sub(lambda found: values[found.group()], arg) for arg in args]
        return AgentCommand(
            argv=argv,
            stdin=request.prompt.encode("utf-8") if PROMPT not in named else b"",
            env={"RALPHCTL_ITERATION": str(request.iteration)},
            prompt_file=request.prompt_path if PROMPT_FILE in named else None,
        )

    def new_parser(self) -> CommandOutputParser:
        return CommandOutputParser(tokens=self.tokens, cost=self.cost, model=self.model)


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


def _make(options: Mapping[str, str]) -> CommandAdapter:
    if not options.get("agent_command"):
        raise ValueError(
            "the command agent needs its command line: agent_command "
            "(--agent-command 'my-agent --prompt-file {prompt_file}')"
        )
    return CommandAdapter(
        options["agent_command"],
        tokens_regex=options.get("agent_tokens_regex"),
        cost_regex=options.get("agent_cost_regex"),
        model=options.get("model"),
    )


def _parser() -> CommandOutputParser:
    """A parser without usage patterns (a stored transcript is read for its text)."""
    return CommandOutputParser()


SPEC = AgentSpec(
    name="command",
    summary="any CLI: the prompt on stdin, in {prompt} or in {prompt_file}; plain-text output",
    make=_make,
    parser=_parser,
    capabilities=CAPABILITIES,
    options=frozenset({"agent_command", "agent_tokens_regex", "agent_cost_regex", "model"}),
)
