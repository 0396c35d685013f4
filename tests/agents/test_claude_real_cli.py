"""ClaudeAdapter + run_agent stopping the REAL Claude Code CLI while its Bash tool runs."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from ralphctl.agents.base import AgentRequest
from ralphctl.agents.claude import ClaudeAdapter
from ralphctl.agents.events import AgentEvent, ToolCall, ToolOutput
from ralphctl.agents.process import run_agent
from ralphctl.domain.model import IterationResult
from tests.agents.procs import gone
from tests.mockapi import Reply
from tests.mockapi import ToolCall as MockToolCall
from tests.realcli.harness import RealClaude

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(120)]

SESSION = "5e55a1d0-0000-4000-8000-0000000000aa"
# The Bash tool refuses a plain `sleep 30`; a sleeping python is fine. It records its pid.
SLOW_TOOL = (
    "python3 -c \"import os,time; open('tool.pid','w').write(str(os.getpid())); time.sleep(60)\""
)


def run_claude(
    real_claude: RealClaude,
    monkeypatch: pytest.MonkeyPatch,
    *,
    timeout: float | None,
    interrupt_once_the_tool_runs: bool = False,
) -> tuple[IterationResult, list[AgentEvent]]:
    real_claude.server.set_script(
        MockToolCall("Bash", {"command": SLOW_TOOL, "description": "wait"}), Reply("Stopped.")
    )
    monkeypatch.setenv("RALPHCTL_CLAUDE_BIN", real_claude.env["RALPHCTL_CLAUDE_BIN"])
    adapter = ClaudeAdapter()
    request = AgentRequest(
        prompt="Wait for the slow tool.",
        workdir=real_claude.project,
        iteration=1,
        session_id=SESSION,
        extra_args=["--allowedTools", "Bash"],
    )
    command = adapter.build_command(request)
    command = replace(command, env={**real_claude.env, **command.env})
    pid_file = real_claude.project / "tool.pid"
    events: list[AgentEvent] = []

    async def go() -> IterationResult:
        interrupt = asyncio.Event()

        async def interrupt_when_the_tool_runs() -> None:
            while not pid_file.exists() or not pid_file.read_text():
                await asyncio.sleep(0.05)
            interrupt.set()

        watcher = asyncio.ensure_future(interrupt_when_the_tool_runs())
        try:
            return await run_agent(
                command,
                adapter.new_parser(),
                cwd=real_claude.project,
                timeout=timeout,
                on_event=events.append,
                interrupt=interrupt if interrupt_once_the_tool_runs else None,
                grace_s=10,
            )
        finally:
            watcher.cancel()

    return asyncio.run(go()), events


def tool_pid(real_claude: RealClaude) -> int:
    return int(Path(real_claude.project / "tool.pid").read_text())


def test_an_interrupt_ends_claudes_turn_cleanly_with_its_cost(
    real_claude: RealClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, events = run_claude(
        real_claude, monkeypatch, timeout=60, interrupt_once_the_tool_runs=True
    )

    assert any(isinstance(e, ToolCall) and e.name == "Bash" for e in events)
    assert any(isinstance(e, ToolOutput) and e.is_error for e in events)  # the tool was cut
    assert result.interrupted
    assert result.exit_code == 0  # SIGINT: the CLI ends the turn and writes its result
    assert result.cost_usd is not None
    assert result.cost_usd > 0
    assert result.session_id == SESSION
    assert gone(tool_pid(real_claude))


def test_a_timeout_stops_claude_and_its_tools_and_keeps_the_cost(
    real_claude: RealClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, _ = run_claude(real_claude, monkeypatch, timeout=10)

    assert result.timed_out
    assert result.is_error  # a timed-out iteration is an error, even with a result line
    assert result.exit_code == 0  # SIGINT: the CLI ends its turn and writes its result
    assert result.cost_usd is not None
    assert result.cost_usd > 0  # the API calls made before the timeout are accounted for
    assert result.session_id == SESSION
    assert gone(tool_pid(real_claude))
