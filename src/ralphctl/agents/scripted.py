"""The scripted agent: an offline program that speaks Claude's stream-json (for demos, tests).

The program is ``ralphctl.agents.scripted_agent``; this adapter runs it with the current
interpreter and parses its output with the Claude parser, so everything downstream is the
same as with the real CLI.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from ralphctl.agents.base import AgentCommand, AgentRequest, AgentUnavailable, Capabilities
from ralphctl.agents.claude import ClaudeStreamParser
from ralphctl.agents.spec import AgentSpec

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

    def new_parser(self) -> ClaudeStreamParser:
        return ClaudeStreamParser()


def _make(options: Mapping[str, str]) -> ScriptedAdapter:
    if "script" not in options:
        raise ValueError("the scripted agent needs its script: option script=PATH")
    return ScriptedAdapter(options["script"])


SPEC = AgentSpec(
    name="scripted",
    summary="an offline program playing a JSON script (demos, tests)",
    make=_make,
    parser=ClaudeStreamParser,
    capabilities=ScriptedAdapter.capabilities,
    options=frozenset({"script"}),
)
