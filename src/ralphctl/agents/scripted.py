"""The scripted agent: an offline program that speaks Claude's stream-json (for demos, tests).

The program is ``ralphctl.agents.scripted_agent``; this adapter runs it with the current
interpreter and parses its output with the Claude parser, so everything downstream is the
same as with the real CLI.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ralphctl.agents.base import (
    AgentCommand,
    AgentRequest,
    AgentUnavailable,
    Capabilities,
    StreamParser,
)
from ralphctl.agents.spec import AgentSpec

if TYPE_CHECKING:
    from ralphctl.agents.claude_stream import ClaudeStreamParser

PROGRAM = "ralphctl.agents.scripted_agent"


class ScriptedAdapter:
    """Plays a JSON script (docs/scripted-agent.md), one step per iteration."""

    name: str = "scripted"
    capabilities: Capabilities = Capabilities(
        reports_cost=True, reports_tokens=True, structured_stream=True
    )

    def __init__(self, script: Path | str) -> None:
        self.script = Path(script).absolute()

    def check_available(self) -> None:
        if not self.script.is_file():
            raise AgentUnavailable(
                f"scripted agent: script not found: {self.script} (see docs/scripted-agent.md)"
            )

    def build_command(self, request: AgentRequest) -> AgentCommand:
        """``python -m ralphctl.agents.scripted_agent SCRIPT --session-id ID``; ``extra_args``
        and the permission mode mean nothing to it and are left out."""
        argv = [sys.executable, "-m", PROGRAM, str(self.script), "--session-id", request.session_id]
        return AgentCommand(
            argv=argv,
            stdin=request.prompt.encode("utf-8"),
            env={"RALPHCTL_ITERATION": str(request.iteration)},
        )

    def new_parser(self) -> StreamParser:
        return new_parser()


def _make(options: Mapping[str, str]) -> ScriptedAdapter:
    if "script" not in options:
        raise ValueError("the scripted agent needs its script: option script=PATH")
    return ScriptedAdapter(options["script"])


@functools.cache
def parser_class() -> type[ClaudeStreamParser]:
    """The stream parser, imported once a run has printed its first line (start-up)."""
    from ralphctl.agents.claude_stream import ClaudeStreamParser

    return ClaudeStreamParser


def new_parser() -> StreamParser:
    return parser_class()()


SPEC = AgentSpec(
    name="scripted",
    summary="an offline program playing a JSON script (demos, tests)",
    make=_make,
    parser=new_parser,
    capabilities=ScriptedAdapter.capabilities,
    options=frozenset({"script"}),
)
