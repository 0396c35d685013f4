"""Run one agent process: its own process group, live parsing, timeout and clean kills.

The process starts in a new session, so the agent and everything it spawns (its Bash tool's
children included) form one process group that is signalled as a whole:

- timeout or ``interrupt`` set: SIGINT to the group (Claude Code then ends its turn cleanly
  and still prints its result, with the cost), ``grace_s`` later SIGKILL;
- ``force`` set: SIGKILL at once;
- a command the agent's tool started in a group of its own (Gemini CLI's shell tool does) is
  found among the agent's descendants before the first signal and killed once the agent is;
- once the agent (the group leader) has exited, SIGKILL to whatever is left of its group, so
  a background child that still holds stdout cannot keep the read open. A process that left
  the group (``setsid``) and holds stdout delays the end by ``grace_s`` at most.

``on_spawn`` learns the agent's pid (its process group's id) and the wall-clock time just
before it was started, so that a caller can record them and a later process can recognise and
stop an agent whose runner died (``engine/orphans``).

Memory stays bounded whatever the agent prints: ``on_output`` sees stdout as it arrives (to
stream it to a transcript), and lines are handed to the parser only up to
``MAX_PARSED_LINE_BYTES``; a longer line is counted in ``IterationResult.oversized_lines``, never
held whole. Running out of memory while reading the output kills the agent and makes the run an
error (``OUT_OF_MEMORY``), never a crash of the caller.

A command with a ``prompt_file`` gets its prompt there instead of on stdin: the file is created
exclusively with mode 0600 in a private directory (created 0700 if missing; one that is not a
directory of this user's, closed to others, is refused), the agent's stdin is closed at once,
and the file is deleted when the run ends, however it ends (exit, timeout, kill, a failed
spawn, a cancelled caller).

The leader is always reaped before ``run_agent`` returns. ``ProcessOutcome.exit_code`` is the
exit status as asyncio reports it: ``0..255``, or ``-N`` when signal N killed the agent. A
program that catches the signal and exits by itself reports its own code instead: Claude Code
exits with 143 (128 + SIGTERM) on SIGTERM, and with 0 after ending its turn on SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ralphctl.agents.base import AgentCommand, AgentUnavailable, ProcessOutcome, StreamParser
from ralphctl.agents.childwatch import use_pidfd
from ralphctl.agents.private_dirs import make_private_dirs
from ralphctl.domain.model import IterationResult

if TYPE_CHECKING:
    import psutil

    from ralphctl.agents.events import AgentEvent

STDERR_TAIL_BYTES = 8 * 1024
#: The longest line the parser sees. Claude's largest lines are tool results (its Read and Bash
#: tools cap what they return) and the ``result`` line (the final text); see docs/transcripts.md.
MAX_PARSED_LINE_BYTES = 8 * 1024 * 1024
OUT_OF_MEMORY = "out of memory while reading the agent's output: the agent was stopped"


async def run_agent(
    command: AgentCommand,
    parser: StreamParser,
    *,
    cwd: Path,
    timeout: float | None,
    on_event: Callable[[AgentEvent], None] | None = None,
    on_spawn: Callable[[int, float], None] | None = None,
    on_output: Callable[[bytes], None] | None = None,
    interrupt: asyncio.Event | None = None,
    force: asyncio.Event | None = None,
    grace_s: float = 3.0,
) -> IterationResult:
    """Run ``command`` in ``cwd``, feed its stdout to ``parser`` line by line, and return
    ``parser.finish(outcome)``. ``on_output`` sees every byte of stdout as it arrives (before
    parsing); ``on_event`` sees each event as it arrives; ``on_spawn`` is called once with the
    agent's pid and start time (``time.time()``). If one of them raises, the agent is killed
    and the exception propagates. A missing or unrunnable executable raises AgentUnavailable,
    as does a prompt file (``command.prompt_file``) that cannot be written safely.
    """
    protocol = _AgentProtocol(parser, on_event, on_output)
    started = time.monotonic()
    spawned_at = time.time()
    with prompt_file(command):  # deleted once the agent's group is gone
        transport = await _spawn(protocol, command, cwd)
        pid = transport.get_pid()
        try:
            _send_stdin(transport, b"" if command.prompt_file is not None else command.stdin)
            if on_spawn is not None:
                on_spawn(pid, spawned_at)
            timed_out, interrupted = await _wait_for_exit(
                pid,
                protocol.exited,
                timeout=timeout,
                interrupt=interrupt,
                force=force,
                broken=protocol.broken,
                grace_s=grace_s,
            )
        finally:
            # The agent if it still runs (the caller cancelled us), and whatever it left behind.
            signal_group(pid, signal.SIGKILL)
            await protocol.exited.wait()
            with contextlib.suppress(TimeoutError):  # pipes close as the group dies
                await asyncio.wait_for(protocol.closed.wait(), grace_s)
            transport.close()
    protocol.end_of_stdout()
    if protocol.error is not None:
        raise protocol.error
    outcome = ProcessOutcome(
        exit_code=transport.get_returncode(),
        duration_ms=round((time.monotonic() - started) * 1000),
        stderr_tail=protocol.stderr_tail(),
        timed_out=timed_out,
        interrupted=interrupted,
    )
    result = replace(parser.finish(outcome), oversized_lines=protocol.oversized_lines)
    if protocol.out_of_memory:
        message = "; ".join(filter(None, (OUT_OF_MEMORY, result.error_message)))
        result = replace(result, is_error=True, error_message=message)
    return result


@contextlib.contextmanager
def prompt_file(command: AgentCommand) -> Iterator[None]:
    """Write ``command.stdin`` to ``command.prompt_file`` (if set) for the block, then delete
    it. AgentUnavailable if it cannot be written safely."""
    path = command.prompt_file
    if path is None:
        yield
        return
    _write_private(path, command.stdin)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def _write_private(path: Path, data: bytes) -> None:
    """Create ``path`` (mode 0600, never an existing file) in a private directory of this
    user's holding ``data``."""
    folder = path.parent
    try:
        make_private_dirs(folder)
        found = folder.lstat()
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid():
            raise PermissionError(f"{folder} is not a directory of this user's")
        if found.st_mode & 0o077:
            raise PermissionError(f"{folder} is open to other users (mode {found.st_mode:o})")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise AgentUnavailable(f"cannot write the agent's prompt file {path}: {reason}") from exc
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise AgentUnavailable(f"cannot write the agent's prompt file {path}: {exc}") from exc


class LineSplitter:
    """Cuts a byte stream into lines without their ``\\n``, holding at most ``max_line_bytes``.

    A longer line is dropped as soon as it outgrows the limit: ``on_oversized`` gets its length
    once it ends, ``on_line`` never sees it.
    """

    def __init__(
        self,
        on_line: Callable[[bytes], None],
        *,
        max_line_bytes: int = MAX_PARSED_LINE_BYTES,
        on_oversized: Callable[[int], None] | None = None,
    ) -> None:
        self._on_line = on_line
        self._on_oversized = on_oversized
        self._max = max_line_bytes
        self._partial = bytearray()
        self._dropped = 0  # the length so far of a line over the limit (0: none)

    def feed(self, data: bytes) -> None:
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            if not self._partial and not self._dropped and end - start <= self._max:
                self._on_line(data[start:end])
            else:
                self._add(data[start:end])
                self._end_line()
            start = end + 1
        self._add(data[start:])

    def flush(self) -> None:
        """Hand over the last line if the stream did not end with a newline."""
        if self._partial or self._dropped:
            self._end_line()

    def _add(self, piece: bytes) -> None:
        if self._dropped:
            self._dropped += len(piece)
        elif len(self._partial) + len(piece) > self._max:
            self._dropped = len(self._partial) + len(piece)
            self._partial = bytearray()  # a new buffer: clear() may keep the memory
        else:
            self._partial += piece

    def _end_line(self) -> None:
        if self._dropped:
            size, self._dropped = self._dropped, 0
            if self._on_oversized is not None:
                self._on_oversized(size)
            return
        line = bytes(self._partial)
        self._partial.clear()
        self._on_line(line)


class _AgentProtocol(asyncio.SubprocessProtocol):
    """Receives the agent's pipes; parses stdout as it arrives, keeps a tail of stderr."""

    def __init__(
        self,
        parser: StreamParser,
        on_event: Callable[[AgentEvent], None] | None,
        on_output: Callable[[bytes], None] | None,
    ) -> None:
        self.exited = asyncio.Event()  # the agent itself has exited (and was reaped)
        self.closed = asyncio.Event()  # ... and every pipe is closed
        self.broken = asyncio.Event()  # a callback failed or memory ran out: stop the agent now
        self.error: Exception | None = None
        self.out_of_memory = False
        self.oversized_lines = 0
        self._parser = parser
        self._on_event = on_event
        self._on_output = on_output
        self._stdout = LineSplitter(
            self._on_line, max_line_bytes=MAX_PARSED_LINE_BYTES, on_oversized=self._on_oversized
        )
        self._stderr = bytearray()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self._guarded(lambda: self._stdout_received(data))
        elif fd == 2:
            self._stderr += data
            del self._stderr[:-STDERR_TAIL_BYTES]

    def process_exited(self) -> None:
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()

    def end_of_stdout(self) -> None:
        self._guarded(self._stdout.flush)

    def stderr_tail(self) -> str:
        return self._stderr.decode("utf-8", errors="replace")

    def _stdout_received(self, data: bytes) -> None:
        if self._on_output is not None:
            self._on_output(data)
        self._stdout.feed(data)

    def _on_line(self, line: bytes) -> None:
        for event in self._parser.feed(line):
            if self._on_event is not None:
                self._on_event(event)

    def _on_oversized(self, size: int) -> None:
        self.oversized_lines += 1

    def _guarded(self, step: Callable[[], None]) -> None:
        if self.error is not None or self.out_of_memory:
            return
        try:
            step()
        except MemoryError:  # an iteration error, not a crash: stop the agent, drop the rest
            self.out_of_memory = True
            self._stdout = LineSplitter(self._on_line)  # release what the line held
            self.broken.set()
        except Exception as exc:  # a caller's callback failed: remember it, stop the agent
            self.error = exc
            self.broken.set()


async def _spawn(
    protocol: _AgentProtocol, command: AgentCommand, cwd: Path
) -> asyncio.SubprocessTransport:
    if not cwd.is_dir():
        raise NotADirectoryError(f"the agent's working directory does not exist: {cwd}")
    use_pidfd()
    loop = asyncio.get_running_loop()
    try:
        transport, _ = await loop.subprocess_exec(
            lambda: protocol,
            *command.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env={**os.environ, **command.env},
            start_new_session=True,
        )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise AgentUnavailable(f"cannot start the agent {command.argv[0]!r}: {reason}") from exc
    return transport


def _send_stdin(transport: asyncio.SubprocessTransport, data: bytes) -> None:
    """Queue ``data`` for the agent's stdin and close it once written (without waiting)."""
    pipe = transport.get_pipe_transport(0)
    if not isinstance(pipe, asyncio.WriteTransport):
        return
    if data:
        pipe.write(data)
    pipe.close()


async def _wait_for_exit(
    pid: int,
    exited: asyncio.Event,
    *,
    timeout: float | None,
    interrupt: asyncio.Event | None,
    force: asyncio.Event | None,
    broken: asyncio.Event,
    grace_s: float,
) -> tuple[bool, bool]:
    """Wait for the agent to exit, stopping it on timeout or request: (timed_out, interrupted)."""
    first = await first_set((exited, force, broken, interrupt), timeout)
    if first is exited:
        return False, False
    timed_out = first is None
    if not timed_out and first is not interrupt:  # force, or on_event failed
        escaped = escaped_descendants(pid)
        signal_group(pid, signal.SIGKILL)
        await exited.wait()
        kill_all(escaped)
        return False, first is force
    escaped = escaped_descendants(pid)  # while the tree still shows whose they are
    signal_group(pid, signal.SIGINT)  # not SIGTERM: Claude Code would exit without its cost
    if await first_set((exited, force, broken), grace_s) is not exited:
        signal_group(pid, signal.SIGKILL)
    await exited.wait()
    kill_all(escaped)
    return timed_out, not timed_out


async def first_set(
    events: Sequence[asyncio.Event | None], timeout: float | None
) -> asyncio.Event | None:
    """The first of ``events`` (in order of preference) to be set, or None after ``timeout``."""
    present = [event for event in events if event is not None]
    if not any(event.is_set() for event in present):
        waiters = [asyncio.ensure_future(event.wait()) for event in present]
        try:
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
    return next((event for event in present if event.is_set()), None)


def escaped_descendants(pid: int) -> list[psutil.Process]:
    """The live descendants of ``pid`` outside its process group: the commands an agent's
    tool started in a group or session of their own (Gemini CLI's shell tool does), which a
    signal to the agent's group does not reach. Looked up only when the agent is stopped."""
    import psutil  # ~10 ms: only on the way to stopping an agent

    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    escaped = []
    for child in children:
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(child.pid) != pid:
                escaped.append(child)
    return escaped


def kill_all(processes: Sequence[psutil.Process]) -> None:
    """SIGKILL each of ``processes`` still running (a reused pid is recognised and spared)."""
    import psutil

    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.kill()  # psutil checks the pid still names the process it saw


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def pid_exists(pid: int) -> bool:
    """Whether a process with this id exists on this host (it may belong to another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
