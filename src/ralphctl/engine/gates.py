"""Verification gates: shell commands that must pass before a claimed completion counts.

Each gate runs as ``sh -c COMMAND`` in the work dir (in the loop's sandbox if it has one),
stdin from /dev/null, stdout and stderr merged, in its own process group. Only the tail of its
output is kept, so memory stays bounded whatever it prints. On timeout or interrupt the whole
group gets SIGTERM, then SIGKILL ``grace_s`` later; once the gate's shell has exited, whatever
is left of its group (background children) is killed too. The shell is always reaped before
its result returns.

Gates run in order and stop at the first one that does not pass: the rest are listed as
``skipped``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ralphctl.agents.process import first_set, signal_group

OUTPUT_TAIL_BYTES = 8 * 1024
REPORT_TAIL_CHARS = 2000
GRACE_S = 2.0


@dataclass(frozen=True, slots=True)
class GateResult:
    """One gate. ``exit_code`` is ``-N`` when signal N ended it, None when it never ran."""

    command: str
    passed: bool
    exit_code: int | None
    duration_ms: int
    output_tail: str
    timed_out: bool = False
    interrupted: bool = False
    skipped: bool = False  # not run: an earlier gate did not pass


async def run_gates(
    commands: Sequence[str],
    workdir: Path,
    *,
    timeout_s: float,
    interrupt: asyncio.Event | None = None,
    grace_s: float = GRACE_S,
    confine: Callable[[list[str]], list[str]] | None = None,
) -> list[GateResult]:
    """Run ``commands`` in order until one does not pass; one result per command.
    ``confine`` turns a gate's command line into the one that runs it (in the loop's
    sandbox: ``engine/sandboxing``)."""
    results: list[GateResult] = []
    for command in commands:
        if results and not results[-1].passed:
            results.append(GateResult(command, False, None, 0, "", skipped=True))
        else:
            argv = ["sh", "-c", command]
            argv = argv if confine is None else confine(argv)
            results.append(await _run_gate(command, argv, workdir, timeout_s, interrupt, grace_s))
    return results


def gate_report(results: Sequence[GateResult]) -> str | None:
    """What the next prompt says about the gate that did not pass; None when all passed."""
    failed = next((r for r in results if not r.passed and not r.skipped), None)
    if failed is None:
        return None
    lines = [f"The verification gate `{failed.command}` {_how_it_failed(failed)}."]
    tail = failed.output_tail[-REPORT_TAIL_CHARS:].strip("\n")
    if tail:
        fence = "`" * max(3, _longest_backtick_run(tail) + 1)
        lines += ["The end of its output:", fence, tail, fence]
    skipped = [f"`{r.command}`" for r in results if r.skipped]
    if skipped:
        lines.append(f"Not run because of this failure: {', '.join(skipped)}.")
    return "\n".join(lines)


def to_json(results: Sequence[GateResult]) -> list[dict[str, Any]]:
    """The results as the store keeps them with the iteration."""
    return [asdict(result) for result in results]


def _how_it_failed(result: GateResult) -> str:
    seconds = f"{result.duration_ms / 1000:.1f}s"
    if result.timed_out:
        return f"timed out after {seconds} and was killed"
    if result.interrupted:
        return f"was interrupted after {seconds}"
    if result.exit_code is None:
        return "could not be started"
    if result.exit_code < 0:
        return f"was killed by signal {-result.exit_code}"
    return f"failed with exit code {result.exit_code}"


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest


# -- running one gate -----------------------------------------------------------------------


class _GateProtocol(asyncio.SubprocessProtocol):
    """Keeps the tail of the gate's output; tells when it exited and when its pipe closed."""

    def __init__(self) -> None:
        self.exited = asyncio.Event()
        self.closed = asyncio.Event()
        self._tail = bytearray()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._tail += data[-OUTPUT_TAIL_BYTES:]
        del self._tail[:-OUTPUT_TAIL_BYTES]

    def process_exited(self) -> None:
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()

    def output(self) -> str:
        return self._tail.decode("utf-8", errors="replace")


async def _run_gate(
    command: str,
    argv: list[str],
    workdir: Path,
    timeout_s: float,
    interrupt: asyncio.Event | None,
    grace_s: float,
) -> GateResult:
    started = time.monotonic()
    protocol = _GateProtocol()
    try:
        transport, _ = await asyncio.get_running_loop().subprocess_exec(
            lambda: protocol,
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            start_new_session=True,
        )
    except OSError as exc:
        return GateResult(command, False, None, 0, f"cannot run the gate: {exc.strerror or exc}")
    pgid = transport.get_pid()
    timed_out = interrupted = False
    try:
        stop = await first_set([protocol.exited, interrupt], timeout_s)
        if stop is not protocol.exited:
            timed_out, interrupted = stop is None, stop is not None
            signal_group(pgid, signal.SIGTERM)
            if await first_set([protocol.exited], grace_s) is None:
                signal_group(pgid, signal.SIGKILL)
    finally:
        signal_group(pgid, signal.SIGKILL)  # what is left: the shell's background children
        await protocol.exited.wait()
        with contextlib.suppress(TimeoutError):  # a process that left the group may hold it
            await asyncio.wait_for(protocol.closed.wait(), grace_s)
        transport.close()
    exit_code = transport.get_returncode()
    return GateResult(
        command=command,
        passed=exit_code == 0 and not (timed_out or interrupted),
        exit_code=exit_code,
        duration_ms=round((time.monotonic() - started) * 1000),
        output_tail=protocol.output(),
        timed_out=timed_out,
        interrupted=interrupted,
    )
