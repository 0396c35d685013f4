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

import functools
import os
import re
import shlex
import shutil
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ralphctl.agents.base import (
    AgentCommand,
    AgentRequest,
    AgentUnavailable,
    Capabilities,
    StreamParser,
)
from ralphctl.agents.spec import AgentSpec
from ralphctl.domain.usage_patterns import cost_pattern, tokens_pattern

if TYPE_CHECKING:
    from ralphctl.agents.command_output import CommandOutputParser

PROMPT = "{prompt}"
PROMPT_FILE = "{prompt_file}"
#: The largest prompt given as an argument (``{prompt}``); a larger one needs ``{prompt_file}``.
MAX_ARGV_PROMPT_BYTES = 8 * 1024
CAPABILITIES = Capabilities(fresh=True)

_PLACEHOLDER = re.compile(r"\{prompt(?:_file)?\}")


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

    def new_parser(self) -> StreamParser:
        return parser_class()(tokens=self.tokens, cost=self.cost, model=self.model)


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


@functools.cache
def parser_class() -> type[CommandOutputParser]:
    """The stream parser, imported once a run has printed its first line (start-up)."""
    from ralphctl.agents.command_output import CommandOutputParser

    return CommandOutputParser


def _parser() -> StreamParser:
    """A parser without usage patterns (a stored transcript is read for its text)."""
    return parser_class()()


SPEC = AgentSpec(
    name="command",
    summary="any CLI: the prompt on stdin, in {prompt} or in {prompt_file}; plain-text output",
    make=_make,
    parser=_parser,
    capabilities=CAPABILITIES,
    options=frozenset({"agent_command", "agent_tokens_regex", "agent_cost_regex", "model"}),
)
