"""Read stored transcripts: raw chunks, lines, readable text, and following a running loop.

Everything here streams: a transcript is read a page of chunks at a time and cut into lines
no longer than ``MAX_PARSED_LINE_BYTES`` (a longer one shows as its size), so reading a
100 MB transcript holds a few megabytes at most.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ralphctl.agents.base import ProcessOutcome, StreamParser
from ralphctl.agents.events import (
    AgentEvent,
    ApiRetry,
    Finished,
    PermissionDenied,
    RateLimitSignal,
    RawLine,
    SessionStarted,
    TextChunk,
    ToolCall,
    ToolOutput,
    printable,
)
from ralphctl.agents.process import MAX_PARSED_LINE_BYTES, LineSplitter
from ralphctl.agents.registry import stream_parser
from ralphctl.domain.model import IterationResult
from ralphctl.domain.money import format_usd
from ralphctl.engine.control import runner_alive
from ralphctl.store.errors import LoopNotFound
from ralphctl.store.records import LoopRecord
from ralphctl.store.repository import Store
from ralphctl.store.transcript_chunks import iteration_status, read_chunks

#: How often ``follow`` looks for new output.
POLL_S = 0.5


class IterationNotFound(LoopNotFound):
    """The loop exists, the iteration does not (a lookup miss, like a loop that does not)."""


@dataclass(frozen=True, slots=True)
class OversizedLine:
    """A line too long to hold: only its size is known here (the raw transcript has it)."""

    size: int


def transcript_lines(chunks: Iterable[bytes]) -> Iterator[bytes | OversizedLine]:
    """The lines (without ``\\n``) of a stream of output chunks."""
    ready: list[bytes | OversizedLine] = []
    splitter = LineSplitter(
        ready.append,
        max_line_bytes=MAX_PARSED_LINE_BYTES,
        on_oversized=lambda size: ready.append(OversizedLine(size)),
    )
    for chunk in chunks:
        splitter.feed(chunk)
        yield from ready
        ready.clear()
    splitter.flush()
    yield from ready


def transcript_text(lines: Iterable[bytes | OversizedLine], parser: StreamParser) -> Iterator[str]:
    """The output as text for people: what the agent said, its tool calls and their errors,
    retries and limits, and every line outside its structured stream, as printed."""
    text = _TextWriter()
    for line in lines:
        if isinstance(line, OversizedLine):
            yield text.line(f"[a line of {line.size:,} bytes, too long to show: see --raw]")
            continue
        for event in parser.feed(line):
            if piece := text.event(event):
                yield piece
    if ending := text.end():
        yield ending


def check_iteration(store: Store, loop: LoopRecord, n: int) -> None:
    """IterationNotFound unless iteration ``n`` of ``loop`` was begun."""
    if iteration_status(store, loop.id, n) is None:
        raise IterationNotFound(f"loop {loop.id} has no iteration {n}")


def latest_iteration(store: Store, loop: LoopRecord) -> int:
    """The loop's newest iteration begun: the one running, else the last recorded (0: none)."""
    running = loop.iteration + 1
    return running if iteration_status(store, loop.id, running) is not None else loop.iteration


def follow_chunks(store: Store, loop_id: str, n: int, *, poll_s: float = POLL_S) -> Iterator[bytes]:
    """Iteration ``n``'s output, then what arrives while more may come (``_more_may_come``);
    ends once no more can (or its runner is gone), after reading what came last."""
    after = -1
    while True:
        ended = not _more_may_come(store, loop_id, n)  # first: nothing written after is missed
        page = read_chunks(store, loop_id, n, after=after)
        yield from (chunk.data for chunk in page)
        if page:
            after = page[-1].seq
        elif ended:
            return
        else:
            time.sleep(poll_s)


def follow_loop(
    store: Store, loop_id: str, first: int, *, poll_s: float = POLL_S
) -> Iterator[tuple[int, Iterator[bytes]]]:
    """Each iteration from ``first`` on with its output as it arrives, while the loop runs."""
    n = first
    while True:
        if iteration_status(store, loop_id, n) is not None:
            yield n, follow_chunks(store, loop_id, n, poll_s=poll_s)
            n += 1
        elif _active(store.get_loop(loop_id)):
            time.sleep(poll_s)
        else:
            return


def parser_for(loop: LoopRecord) -> StreamParser:
    """A parser for the output of the loop's agent; for an agent this version does not know
    (a database shared with a newer ralphctl), one that shows every line as printed."""
    try:
        return stream_parser(loop.agent)
    except ValueError:
        return _PlainLines()


class _PlainLines:
    """A StreamParser that understands nothing: every line is a RawLine, no usage."""

    def feed(self, line: bytes) -> list[AgentEvent]:
        return [RawLine.of(line)]

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        return IterationResult(exit_code=outcome.exit_code, duration_ms=outcome.duration_ms)


def _more_may_come(store: Store, loop_id: str, n: int) -> bool:
    """Iteration ``n`` runs, or is the newest of a loop a runner is at work on: a hook-mode
    session's closing lines (its ``result``) arrive after its last iteration has ended."""
    if not _active(store.get_loop(loop_id)):
        return False
    return (
        iteration_status(store, loop_id, n) == "running"
        or iteration_status(store, loop_id, n + 1) is None
    )


def _active(loop: LoopRecord) -> bool:
    """A runner is at work on the loop (or about to be): more output may come."""
    return loop.status.is_active and (loop.runner_pid is None or runner_alive(loop))


class _TextWriter:
    """Events to text: a whole text block ends its line, pieces of one (deltas) continue it."""

    def __init__(self) -> None:
        self._open = False  # the last text written did not end its line

    def line(self, text: str) -> str:
        start = "\n" if self._open else ""
        self._open = False
        return f"{start}{text}\n"

    def event(self, event: AgentEvent) -> str:
        if isinstance(event, TextChunk):
            text = printable(event.text)  # a model can write escape sequences too
            if event.delta:
                self._open = not text.endswith("\n")
                return text
            return self.line(text.rstrip("\n"))
        said = _said(event)
        return self.line(said) if said is not None else ""

    def end(self) -> str:
        return "\n" if self._open else ""


def _said(event: AgentEvent) -> str | None:
    """One line for an event other than text; None for those not worth a line."""
    if isinstance(event, ToolCall):
        return f"→ {event.name} {event.summary}".rstrip()
    if isinstance(event, ToolOutput):
        return "  ✗ the tool failed" if event.is_error else None
    if isinstance(event, RawLine):
        return event.text
    if isinstance(event, SessionStarted):
        details = " · ".join(filter(None, (event.model, event.agent_version)))
        return f"── session {event.session_id}" + (f" ({details})" if details else "")
    if isinstance(event, ApiRetry):
        return f"! API retry {event.attempt}: {event.error or event.error_status}"
    if isinstance(event, RateLimitSignal):
        return None if event.status == "allowed" else f"! usage limit: {event.status}"
    if isinstance(event, PermissionDenied):
        return f"! permission denied: {event.tool_name}"
    if isinstance(event, Finished):
        cost = "" if event.cost_usd is None else f" · {format_usd(event.cost_usd)}"
        return f"── finished: {'error' if event.is_error else 'ok'}{cost}"
    return None
