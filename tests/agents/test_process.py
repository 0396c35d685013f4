"""run_agent with real subprocesses: streaming, stdin, timeouts, interrupts, clean kills."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ralphctl.agents.base import AgentCommand, AgentUnavailable, ProcessOutcome
from ralphctl.agents.events import AgentEvent, TextChunk
from ralphctl.agents.process import STDERR_TAIL_BYTES, run_agent
from ralphctl.domain.model import IterationResult
from tests.agents.procs import gone, group_members, reaped

pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc"),
    pytest.mark.timeout(60),
]


class LineRecorder:
    """A StreamParser that hands every line back as a TextChunk and keeps the outcome."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.outcome: ProcessOutcome | None = None

    def feed(self, line: bytes) -> list[AgentEvent]:
        self.lines.append(line)
        return [TextChunk(line.decode(errors="replace"))]

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        self.outcome = outcome
        return IterationResult(exit_code=outcome.exit_code, timed_out=outcome.timed_out)


def python(*code: str, env: dict[str, str] | None = None, stdin: bytes = b"") -> AgentCommand:
    """``python -c`` running the pieces of ``code`` one after the other."""
    program = "\n".join(textwrap.dedent(piece) for piece in code)
    return AgentCommand([sys.executable, "-c", program], stdin, env or {})


def run(
    command: AgentCommand,
    tmp_path: Path,
    *,
    timeout: float | None = 20,
    on_event: Callable[[AgentEvent], None] | None = None,
    on_spawn: Callable[[int, float], None] | None = None,
    interrupt: asyncio.Event | None = None,
    force: asyncio.Event | None = None,
    grace_s: float = 3.0,
) -> tuple[LineRecorder, ProcessOutcome]:
    recorder = LineRecorder()
    asyncio.run(
        run_agent(
            command,
            recorder,
            cwd=tmp_path,
            timeout=timeout,
            on_event=on_event,
            on_spawn=on_spawn,
            interrupt=interrupt,
            force=force,
            grace_s=grace_s,
        )
    )
    assert recorder.outcome is not None
    return recorder, recorder.outcome


SPAWN_GRANDCHILD = """
    import os, subprocess, sys, time
    child = subprocess.Popen(["sleep", "60"])
    print(os.getpid(), child.pid, flush=True)
"""


def pids(recorder: LineRecorder) -> tuple[int, int]:
    leader, grandchild = recorder.lines[0].split()
    return int(leader), int(grandchild)


def test_lines_reach_the_parser_and_on_event_as_they_come(tmp_path: Path) -> None:
    seen: list[AgentEvent] = []
    command = python("print('one'); print('two', flush=True); print('three')")

    recorder, outcome = run(command, tmp_path, on_event=seen.append)

    assert recorder.lines == [b"one", b"two", b"three"]
    assert seen == [TextChunk("one"), TextChunk("two"), TextChunk("three")]
    assert outcome.exit_code == 0
    assert not outcome.timed_out
    assert not outcome.interrupted


def test_the_prompt_goes_to_stdin_and_the_environment_is_extended(tmp_path: Path) -> None:
    command = python(
        """
        import os, sys
        print(sys.stdin.read().upper())
        print(os.environ["RALPHCTL_ITERATION"], "PATH" in os.environ, os.getcwd())
        """,
        env={"RALPHCTL_ITERATION": "7"},
        stdin="fix the tests ✓".encode(),
    )

    recorder, _ = run(command, tmp_path)

    assert recorder.lines == ["FIX THE TESTS ✓".encode(), f"7 True {tmp_path}".encode()]


def test_huge_lines_and_a_last_line_without_newline_arrive_whole(tmp_path: Path) -> None:
    command = python(
        """
        import sys
        sys.stdout.write("a" * 5_000_000 + "\\n" + "b" * 3 + "\\n\\n" + "tail")
        """
    )

    recorder, _ = run(command, tmp_path)

    assert [len(line) for line in recorder.lines] == [5_000_000, 3, 0, 4]
    assert recorder.lines[-1] == b"tail"


def test_only_the_end_of_stderr_is_kept(tmp_path: Path) -> None:
    command = python("import sys; sys.stderr.write('x' * 100_000 + 'THE END')")

    _, outcome = run(command, tmp_path)

    assert len(outcome.stderr_tail) == STDERR_TAIL_BYTES
    assert outcome.stderr_tail.endswith("THE END")


def test_the_exit_status_is_reported(tmp_path: Path) -> None:
    _, outcome = run(python("raise SystemExit(3)"), tmp_path)

    assert outcome.exit_code == 3


def test_a_timeout_terminates_the_whole_group_including_grandchildren(tmp_path: Path) -> None:
    command = python(SPAWN_GRANDCHILD, "time.sleep(60)")

    recorder, outcome = run(command, tmp_path, timeout=1)

    leader, grandchild = pids(recorder)
    assert outcome.timed_out
    assert outcome.exit_code == -signal.SIGINT
    assert reaped(leader)
    assert gone(grandchild)
    assert all(gone(pid) for pid in group_members(leader))


def test_an_agent_that_ignores_sigint_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    command = python(
        """
        import signal, time
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("stubborn", flush=True)
        time.sleep(60)
        """
    )

    _, outcome = run(command, tmp_path, timeout=1, grace_s=0.5)

    assert outcome.timed_out
    assert outcome.exit_code == -signal.SIGKILL


def interrupt_when(line: bytes, event: asyncio.Event) -> Callable[[AgentEvent], None]:
    def on_event(agent_event: AgentEvent) -> None:
        if agent_event == TextChunk(line.decode()):
            event.set()

    return on_event


def test_an_interrupt_sends_sigint_so_the_agent_can_finish_its_turn(tmp_path: Path) -> None:
    command = python(
        """
        import time
        try:
            print("ready", flush=True)
            time.sleep(60)
        except KeyboardInterrupt:
            print("turn ended cleanly")
        """
    )
    interrupt = asyncio.Event()

    recorder, outcome = run(
        command, tmp_path, interrupt=interrupt, on_event=interrupt_when(b"ready", interrupt)
    )

    assert recorder.lines == [b"ready", b"turn ended cleanly"]
    assert outcome.interrupted
    assert not outcome.timed_out
    assert outcome.exit_code == 0


def test_an_interrupt_that_is_ignored_ends_in_sigkill(tmp_path: Path) -> None:
    command = python(
        """
        import signal, time
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    interrupt = asyncio.Event()

    _, outcome = run(
        command,
        tmp_path,
        interrupt=interrupt,
        on_event=interrupt_when(b"ready", interrupt),
        grace_s=0.5,
    )

    assert outcome.interrupted
    assert outcome.exit_code == -signal.SIGKILL


def test_force_kills_the_group_at_once(tmp_path: Path) -> None:
    command = python(
        SPAWN_GRANDCHILD,
        """
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("ready", flush=True)
    time.sleep(60)
    """,
    )
    force = asyncio.Event()

    recorder, outcome = run(
        command, tmp_path, force=force, on_event=interrupt_when(b"ready", force), grace_s=30
    )

    leader, grandchild = pids(recorder)
    assert outcome.interrupted
    assert outcome.exit_code == -signal.SIGKILL
    assert reaped(leader)
    assert gone(grandchild)


def test_a_background_child_holding_stdout_does_not_hang_the_read(tmp_path: Path) -> None:
    # The agent's Bash tool may start `sleep 60 &`: it inherits stdout and outlives the agent.
    command = AgentCommand(["sh", "-c", "sleep 60 & echo $$ $!"])

    recorder, outcome = run(command, tmp_path, timeout=None)

    leader, background = pids(recorder)
    assert outcome.exit_code == 0
    assert not outcome.timed_out
    assert reaped(leader)
    assert gone(background)


def test_a_process_that_left_the_group_delays_the_end_by_the_grace_period_only(
    tmp_path: Path,
) -> None:
    # `setsid` puts the holder of stdout out of reach of the group kill: the read gives up
    # after grace_s instead of waiting for it.
    command = python(
        """
        import subprocess
        print(subprocess.Popen(["sleep", "60"], start_new_session=True).pid)
        """
    )

    recorder, outcome = run(command, tmp_path, timeout=None, grace_s=0.5)

    escaped = int(recorder.lines[0])
    try:
        assert os.getsid(escaped) == escaped
        assert outcome.exit_code == 0
        assert not outcome.timed_out
    finally:
        os.kill(escaped, signal.SIGKILL)


def test_if_on_event_raises_the_agent_is_killed_and_the_error_propagates(
    tmp_path: Path,
) -> None:
    command = python(SPAWN_GRANDCHILD, "time.sleep(60)")
    started: list[str] = []

    def explode(event: AgentEvent) -> None:
        assert isinstance(event, TextChunk)
        started.append(event.text)
        raise RuntimeError("display crashed")

    with pytest.raises(RuntimeError, match="display crashed"):
        run(command, tmp_path, on_event=explode)

    leader, grandchild = (int(pid) for pid in started[0].split())
    assert reaped(leader)
    assert gone(grandchild)


def test_on_spawn_learns_the_agent_pid_which_is_its_group_and_when_it_started(
    tmp_path: Path,
) -> None:
    spawned: list[tuple[int, float]] = []
    before = time.time()

    recorder, _ = run(
        python("import os; print(os.getpid(), os.getpgid(0))"),
        tmp_path,
        on_spawn=lambda pid, at: spawned.append((pid, at)),
    )

    ((pid, at),) = spawned
    assert recorder.lines == [f"{pid} {pid}".encode()]
    assert before <= at <= time.time()


def test_if_on_spawn_raises_the_agent_is_killed_and_the_error_propagates(
    tmp_path: Path,
) -> None:
    spawned: list[int] = []

    def fail(pid: int, at: float) -> None:
        spawned.append(pid)
        raise RuntimeError("cannot record the start of iteration 1")

    with pytest.raises(RuntimeError, match="cannot record"):
        run(python(SPAWN_GRANDCHILD, "time.sleep(60)"), tmp_path, on_spawn=fail)

    assert reaped(spawned[0])
    assert all(gone(member) for member in group_members(spawned[0]))


def test_cancelling_the_run_kills_and_reaps_the_agent(tmp_path: Path) -> None:
    command = python(SPAWN_GRANDCHILD, "time.sleep(60)")
    recorder = LineRecorder()

    async def cancel_once_started() -> None:
        task = asyncio.ensure_future(run_agent(command, recorder, cwd=tmp_path, timeout=None))
        while not recorder.lines and not task.done():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_once_started())

    leader, grandchild = pids(recorder)
    assert reaped(leader)
    assert gone(grandchild)


def test_a_missing_executable_is_reported_as_agent_unavailable(tmp_path: Path) -> None:
    command = AgentCommand([str(tmp_path / "no-such-agent")])

    with pytest.raises(AgentUnavailable, match=r"cannot start the agent .*no-such-agent"):
        run(command, tmp_path)


def test_a_file_that_cannot_be_executed_is_reported_as_agent_unavailable(tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)

    with pytest.raises(AgentUnavailable, match="Permission denied"):
        run(AgentCommand([str(script)]), tmp_path)


def test_a_missing_working_directory_is_refused_before_spawning(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError, match="does not exist"):
        run(python("print(1)"), tmp_path / "gone")


@pytest.mark.parametrize("stop", ["timeout", "interrupt", "force"])
def test_a_command_in_a_group_of_its_own_dies_with_the_stopped_agent(
    tmp_path: Path, stop: str
) -> None:
    # Gemini CLI's shell tool starts each command in a process group of its own, which a
    # signal to the agent's group does not reach; the agent itself exits at once on SIGINT.
    command = python(
        """
        import signal, subprocess, sys, time
        child = subprocess.Popen(["sleep", "60"], start_new_session=True)
        print(child.pid, flush=True)
        print("ready", flush=True)
        signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
        time.sleep(60)
        """
    )
    event = asyncio.Event()

    recorder, outcome = run(
        command,
        tmp_path,
        timeout=2.0 if stop == "timeout" else 20,
        on_event=interrupt_when(b"ready", event),
        interrupt=event if stop == "interrupt" else None,
        force=event if stop == "force" else None,
    )

    escaped = int(recorder.lines[0])
    assert outcome.timed_out is (stop == "timeout")
    assert gone(escaped)
