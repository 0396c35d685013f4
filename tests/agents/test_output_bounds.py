"""Whatever an agent prints, the process layer holds a bounded amount of it: over-long lines
are counted, not parsed; every byte still reaches ``on_output``; running out of memory is an
iteration error."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest

from ralphctl.agents.base import AgentCommand, ProcessOutcome
from ralphctl.agents.claude_stream import ClaudeStreamParser
from ralphctl.agents.events import AgentEvent, RawLine
from ralphctl.agents.process import OUT_OF_MEMORY, LineSplitter, run_agent
from ralphctl.domain.model import IterationResult

pytestmark = pytest.mark.timeout(60)


class LineKeeper:
    """A StreamParser that keeps its lines (and can be told to run out of memory)."""

    def __init__(self, *, fail_on: bytes | None = None) -> None:
        self.lines: list[bytes] = []
        self.fail_on = fail_on

    def feed(self, line: bytes) -> list[AgentEvent]:
        if self.fail_on is not None and line.startswith(self.fail_on):
            raise MemoryError
        self.lines.append(line)
        return []

    def finish(self, outcome: ProcessOutcome) -> IterationResult:
        return IterationResult(exit_code=outcome.exit_code, is_error=outcome.exit_code != 0)


def agent(code: str) -> AgentCommand:
    return AgentCommand([sys.executable, "-c", textwrap.dedent(code)])


def run(command: AgentCommand, parser: LineKeeper, tmp_path: Path) -> tuple[IterationResult, bytes]:
    output = bytearray()
    result = asyncio.run(
        run_agent(command, parser, cwd=tmp_path, timeout=30, on_output=output.extend)
    )
    return result, bytes(output)


def test_a_line_longer_than_the_limit_is_counted_and_never_handed_over() -> None:
    lines: list[bytes] = []
    sizes: list[int] = []
    splitter = LineSplitter(lines.append, max_line_bytes=10, on_oversized=sizes.append)

    splitter.feed(b"short\n0123456789")
    splitter.feed(b"abcdef")
    splitter.feed(b"ghi\nafter\nlast")
    splitter.flush()

    assert lines == [b"short", b"after", b"last"]
    assert sizes == [19]


def test_a_line_exactly_at_the_limit_is_handed_over_whole_across_chunks() -> None:
    lines: list[bytes] = []
    splitter = LineSplitter(lines.append, max_line_bytes=10)

    splitter.feed(b"01234")
    splitter.feed(b"56789\n")

    assert lines == [b"0123456789"]


def test_every_byte_reaches_on_output_nul_bytes_and_invalid_utf8_included(tmp_path: Path) -> None:
    printed = b"one\n\x00\x01\xff\xfe not utf-8\n" + b"y" * 300_000 + b"\nno newline at the end"
    command = AgentCommand(
        [sys.executable, "-c", "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"],
        stdin=printed,
    )

    parser = LineKeeper()
    result, output = run(command, parser, tmp_path)

    assert output == printed
    assert parser.lines == printed.split(b"\n")
    assert result.oversized_lines == 0


def test_an_over_long_line_reaches_the_output_whole_and_is_recorded_as_oversized(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ralphctl.agents.process.MAX_PARSED_LINE_BYTES", 1000)
    command = agent("import sys; sys.stdout.write('a\\n' + 'x' * 5000 + '\\nb\\n')")

    parser = LineKeeper()
    result, output = run(command, parser, tmp_path)

    assert parser.lines == [b"a", b"b"]
    assert result.oversized_lines == 1
    assert output == b"a\n" + b"x" * 5000 + b"\nb\n"


def test_running_out_of_memory_while_parsing_stops_the_agent_and_is_an_iteration_error(
    tmp_path: Path,
) -> None:
    command = agent(
        """
        import sys, time
        print("fine", flush=True)
        print("huge", flush=True)
        time.sleep(30)
        """
    )

    result, _ = run(command, LineKeeper(fail_on=b"huge"), tmp_path)

    assert result.is_error
    assert result.error_message is not None
    assert result.error_message.startswith(OUT_OF_MEMORY)
    assert result.exit_code == -9  # stopped at once, not after its 30 s


def test_a_line_outside_the_stream_becomes_a_printable_raw_line_event() -> None:
    parser = ClaudeStreamParser()

    events = parser.feed(b"WARNING: \x1b[31mred\x1b[0m \x00 and \xff")

    assert events == [RawLine("WARNING: \ufffd[31mred\ufffd[0m \ufffd and \ufffd")]


def test_blank_lines_and_json_objects_are_not_raw_lines() -> None:
    parser = ClaudeStreamParser()

    assert parser.feed(b"   ") == []
    assert parser.feed(b'{"type":"unknown_kind"}') == []
    assert parser.feed(b"[1, 2]") == [RawLine("[1, 2]")]


def test_a_raw_line_event_carries_at_most_2000_characters() -> None:
    (event,) = ClaudeStreamParser().feed(b"z" * 50_000)

    assert isinstance(event, RawLine)
    assert len(event.text) == 2000
    assert event.text.endswith("…")
