"""Agents run for real under bubblewrap (``loop_command`` + ``run_agent``): what they may not
do is refused, their work in the work dir lands, and the runner can still stop them."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentCommand, AgentRequest
from ralphctl.agents.claude_stream import ClaudeStreamParser
from ralphctl.agents.process import run_agent
from ralphctl.agents.scripted import ScriptedAdapter
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.model import IterationResult
from ralphctl.engine.gates import GateResult, run_gates
from ralphctl.engine.sandboxing import gate_confinement, loop_command

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("bwrap", "home")]


def play(
    tmp_path: Path, step: dict[str, Any], **settings: Any
) -> tuple[IterationResult, dict[str, tuple[bool, str]], Path]:
    """Run one scripted step in ``tmp_path/work`` under the sandbox: its result, and each
    Bash command's (failed, output)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [step]}))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    config = LoopConfig(agent="scripted", script=str(script), sandbox=True, **settings)
    adapter = ScriptedAdapter(script)
    request = AgentRequest(prompt="Go.", workdir=work, iteration=1, session_id="s-1")
    command = loop_command(adapter.build_command(request), config, work)
    output = bytearray()
    result = asyncio.run(
        run_agent(command, adapter.new_parser(), cwd=work, timeout=30, on_output=output.extend)
    )
    return result, bash_outcomes(bytes(output)), work


def bash_outcomes(stream: bytes) -> dict[str, tuple[bool, str]]:
    """Each Bash command of a stream-json output with (failed, what it printed)."""
    commands: dict[str, str] = {}
    outcomes: dict[str, tuple[bool, str]] = {}
    for line in stream.splitlines():
        event = json.loads(line)
        for block in event.get("message", {}).get("content", []):
            if block.get("type") == "tool_use" and block["name"] == "Bash":
                commands[block["id"]] = block["input"]["command"]
            elif block.get("type") == "tool_result" and block["tool_use_id"] in commands:
                said = block["content"]
                outcomes[commands[block["tool_use_id"]]] = (block.get("is_error", False), said)
    return outcomes


@pytest.fixture
def usr1() -> Iterator[list[int]]:
    """Records the SIGUSR1 this process receives."""
    received: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, _frame: received.append(signum))
    yield received
    signal.signal(signal.SIGUSR1, previous)


def test_the_agent_cannot_read_the_users_secrets_write_outside_or_signal_the_runner(
    tmp_path: Path, home: Path, usr1: list[int]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    attempts = [
        "cat ~/.ssh/id_ed25519",
        f"echo x > {outside}/escaped.txt",
        f"echo x > {sys.prefix}/escaped.txt",
        f"kill -USR1 {os.getpid()}",
    ]
    step = {"edits": [{"path": "src/app.py", "content": "print(1)\n"}], "bash": attempts}

    result, bash, work = play(tmp_path, {**step, "text": "done"})

    assert result.final_text == "done"
    assert not result.is_error
    assert all(bash[command][0] for command in attempts), bash
    key, written, read_only, killed = (bash[command][1] for command in attempts)
    assert "No such file or directory" in key  # the home is empty
    assert "Directory nonexistent" in written  # /tmp is the sandbox's own
    assert "Read-only file system" in read_only
    assert "No such process" in killed  # the runner is outside its PID namespace
    assert (work / "src" / "app.py").read_text() == "print(1)\n"
    assert not (outside / "escaped.txt").exists()
    assert not Path(sys.prefix, "escaped.txt").exists()
    assert usr1 == []


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port listening on the host's 127.0.0.1 (a local model, say)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def connect(port: int) -> str:
    return (
        f"{sys.executable} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\""
    )


def test_the_hosts_network_is_reachable_by_default(tmp_path: Path, listener: int) -> None:
    _, bash, _ = play(tmp_path, {"bash": [connect(listener)]})
    assert bash[connect(listener)] == (False, "")


def test_with_network_none_even_a_local_port_is_out_of_reach(tmp_path: Path, listener: int) -> None:
    _, bash, _ = play(tmp_path, {"bash": [connect(listener)]}, sandbox_net="none")
    failed, said = bash[connect(listener)]
    assert failed
    assert "ConnectionRefusedError" in said


def run_confined(
    tmp_path: Path, program: str, *, agent: str = "claude", interrupt_after: float | None = None
) -> tuple[IterationResult, str]:
    """Run ``python -c program`` as the ``agent``'s command under the sandbox; its result and
    stdout."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    command = AgentCommand([sys.executable, "-c", program])
    confined = loop_command(command, LoopConfig(agent=agent, sandbox=True), work)
    output = bytearray()

    async def run() -> IterationResult:
        interrupt = asyncio.Event()
        if interrupt_after is not None:
            asyncio.get_running_loop().call_later(interrupt_after, interrupt.set)
        return await run_agent(
            confined,
            ClaudeStreamParser(),
            cwd=work,
            timeout=30,
            on_output=output.extend,
            interrupt=interrupt,
            grace_s=5,
        )

    return asyncio.run(run()), output.decode()


ENDS_ITS_TURN_ON_SIGINT = """
import signal, sys, time
def end_turn(*_):
    time.sleep(0.3)  # still working when the runner would have killed a dead group
    print("ended my turn", flush=True)
    sys.exit(0)
signal.signal(signal.SIGINT, end_turn)
print("working", flush=True)
time.sleep(20)
"""


def test_an_interrupt_reaches_the_agent_which_ends_its_turn_cleanly(tmp_path: Path) -> None:
    result, said = run_confined(tmp_path, ENDS_ITS_TURN_ON_SIGINT, interrupt_after=1.0)
    assert said.splitlines() == ["working", "ended my turn"]
    assert result.exit_code == 0


def test_the_users_git_identity_is_readable_and_nothing_else_of_the_home(
    tmp_path: Path, home: Path
) -> None:
    (home / ".gitconfig").write_text("[user]\n\tname = Ada\n")
    (home / ".git-credentials").write_text("https://ada:token@example.invalid\n")
    program = "import pathlib; print(sorted(p.name for p in pathlib.Path.home().iterdir()))"
    _, said = run_confined(tmp_path, program, agent="scripted")
    assert said.strip() == "['.gitconfig']"


def test_the_agents_own_config_dir_is_writable_and_kept(tmp_path: Path, home: Path) -> None:
    program = (
        "import pathlib; home = pathlib.Path.home()\n"
        "(home / '.claude' / 'settings.json').write_text('{}')\n"
        "print(sorted(p.name for p in home.iterdir()))"
    )
    result, said = run_confined(tmp_path, program, agent="claude")
    assert result.exit_code == 0, result.error_message
    assert said.strip() == "['.claude']"  # no .ssh: only what the agent declared is there
    assert (home / ".claude" / "settings.json").read_text() == "{}"


def test_git_works_in_a_worktree_whose_repository_is_outside_the_work_dir(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    identity = ["-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (
        ["init", "-q", str(repo)],
        ["-C", str(repo), *identity, "commit", "-q", "--allow-empty", "-m", "start"],
        ["-C", str(repo), "worktree", "add", "-q", str(tmp_path / "work")],
    ):
        subprocess.run(["git", *args], check=True, capture_output=True)
    commit = f"git add a.txt && git {' '.join(identity)} commit -q -m 'a'"
    step = {"edits": [{"path": "a.txt", "content": "a\n"}], "bash": [commit]}

    _, bash, _ = play(tmp_path, step)

    assert bash[commit] == (False, "")
    log = subprocess.run(
        ["git", "-C", str(repo), "log", "--all", "--topo-order", "--format=%s"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert log.stdout.split() == ["a", "start"]


@pytest.fixture
def engine_socket(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A listening socket standing for a container engine's, where the sandbox shows the host
    read-only (not under /tmp or the home)."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as folder:
        path = Path(folder) / "engine.sock"
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(path))
            server.listen()
            monkeypatch.setattr("ralphctl.agents.sandbox_host.ENGINE_SOCKETS", (str(path),))
            yield path


def test_a_container_engines_socket_is_out_of_reach(tmp_path: Path, engine_socket: Path) -> None:
    program = (
        "import socket\n"
        f"socket.socket(socket.AF_UNIX).connect({str(engine_socket)!r})\n"
        "print('connected')"
    )
    _, said = run_confined(tmp_path, program)
    assert "connected" not in said


def test_the_agent_commits_but_cannot_plant_git_hooks_or_config(tmp_path: Path) -> None:
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    identity = "-c user.name=t -c user.email=t@t"
    commit = f"git add a.txt && git {identity} commit -q -m a"
    hook = "echo 'touch /tmp/pwned' > .git/hooks/pre-commit"
    config = "git config core.fsmonitor 'touch /tmp/pwned'"
    step = {"edits": [{"path": "a.txt", "content": "a\n"}], "bash": [commit, hook, config]}

    _, bash, _ = play(tmp_path, step)

    assert bash[commit] == (False, "")
    assert bash[hook][0]
    assert "Read-only file system" in bash[hook][1]
    assert bash[config][0]
    assert not (work / ".git" / "hooks" / "pre-commit").exists()
    assert "fsmonitor" not in (work / ".git" / "config").read_text()


def test_a_sandboxed_loops_gates_run_in_the_sandbox_too(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    confine = gate_confinement(LoopConfig(sandbox=True), work)

    def gate(command: str) -> GateResult:
        (result,) = asyncio.run(run_gates([command], work, timeout_s=20, confine=confine))
        return result

    leak = gate("cat ~/.ssh/id_ed25519")
    assert not leak.passed
    assert "No such file or directory" in leak.output_tail
    assert gate("echo ok > checked.txt").passed
    assert (work / "checked.txt").read_text() == "ok\n"
