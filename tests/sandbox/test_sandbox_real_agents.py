"""Each agent's real CLI under ``ralphctl run --sandbox``, against the mock of its provider.

One iteration per agent, in the agent's default permission mode (``acceptEdits``): the CLI
reaches its mock on 127.0.0.1 (network allowed), its real tool call lands a file in the work
dir, and the loop completes on the marker. The sessions are the agents' own real-CLI harnesses
(tests/agents/<agent>/harness.py): hermetic homes, the pinned binaries.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from tests.agents.aider import harness as aider
from tests.agents.aider.scenarios import CREATE_NOTES
from tests.agents.codex import harness as codex
from tests.agents.copilot import harness as copilot
from tests.agents.gemini import harness as gemini
from tests.agents.opencode import harness as opencode
from tests.agents.pinned import required, run_ralphctl
from tests.mockapi import Reply, Turn
from tests.mockapi import ToolCall as Call

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(120), pytest.mark.usefixtures("bwrap")]

DONE = "Wrote notes.txt.\n<promise>COMPLETE</promise>"


class Server(Protocol):
    def set_script(self, *turns: Turn) -> None: ...


class Session(Protocol):
    """What every harness's session has: its mock, its project and the environment that
    points ralphctl and the CLI at them."""

    @property
    def server(self) -> Server: ...
    @property
    def project(self) -> Path: ...
    @property
    def env(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class Agent:
    """One agent: how to start its harness's session, and the turns that make its real tool
    write ``notes.txt`` (``hello``) in the project, then end on the marker."""

    name: str
    session: Callable[[Path], AbstractContextManager[Session]]
    turns: Callable[[Path], tuple[Turn, ...]]
    config: str = ""


def _writes(call: Callable[[Path], Call]) -> Callable[[Path], tuple[Turn, ...]]:
    return lambda project: (call(project), Reply(DONE))


AGENTS = (
    Agent(
        "codex",
        lambda root: codex.real_codex_session(
            required(codex.codex_binary(), codex.INSTALL_HINT), root
        ),
        _writes(lambda _: Call("exec_command", {"cmd": "printf 'hello\\n' > notes.txt"})),
    ),
    Agent(
        "gemini",
        lambda root: gemini.real_gemini_session(
            required(gemini.gemini_binary(), gemini.INSTALL_HINT), root
        ),
        _writes(lambda _: Call("write_file", {"file_path": "notes.txt", "content": "hello\n"})),
    ),
    Agent(
        "opencode",
        lambda root: opencode.real_opencode_session(
            required(opencode.opencode_binary(), opencode.INSTALL_HINT), root
        ),
        _writes(lambda _: Call("write", {"filePath": "notes.txt", "content": "hello\n"})),
        config=f'[loops.llm]\nmodel = "{opencode.MODEL}"\n',
    ),
    Agent(
        "copilot",
        lambda root: copilot.copilot_session(
            required(copilot.copilot_binary(), copilot.INSTALL_HINT), root
        ),
        _writes(
            lambda project: Call(
                "create", {"path": str(project / "notes.txt"), "file_text": "hello\n"}
            )
        ),
    ),
    Agent(
        "aider",
        lambda root: aider.aider_session(required(aider.aider_binary(), aider.INSTALL_HINT), root),
        lambda _: (Reply(CREATE_NOTES.replace("hello from the mock", "hello")),),
    ),
)


@pytest.mark.parametrize("agent", AGENTS, ids=lambda agent: agent.name)
def test_the_agent_lands_its_file_from_inside_the_sandbox_and_completes(
    agent: Agent, tmp_path: Path
) -> None:
    with agent.session(tmp_path) as session:
        session.server.set_script(*agent.turns(session.project))
        (session.project / "ralphctl.toml").write_text(agent.config)

        done = run_ralphctl(
            session.env,
            session.project,
            tmp_path / "ralphctl.db",
            "run",
            "--task",
            "Write notes.txt.",
            "--agent",
            agent.name,
            "--sandbox",
            "--max-iterations",
            "1",
            "--checkpoint-interval",
            "0",
            "--json",
            timeout=100,
        )

        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert (summary["status"], summary["iterations"]) == ("completed", 1), done.stderr
        assert (session.project / "notes.txt").read_text() == "hello\n"
        assert summary["tokens_input"] > 0, done.stderr  # its usage came out of the sandbox
        assert not list((session.project / ".ralph" / "runs").glob("*"))  # read, then deleted
