"""What the terminal shows of an agent's output as it arrives: its text, and every line it
printed outside its stream, made safe for the terminal."""

from __future__ import annotations

import io

from rich.console import Console

from ralphctl.agents.events import AgentEvent, RawLine, TextChunk
from ralphctl.cli.ui import TerminalObserver
from ralphctl.domain.config import LoopConfig
from tests.store.factories import new_loop


def shown(*events: object, quiet: bool = False) -> str:
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False, color_system=None)
    with TerminalObserver(
        lambda: console, new_loop(iteration=1), LoopConfig(), quiet=quiet
    ) as observer:
        for event in events:
            observer.on_agent_event(1, event)  # type: ignore[arg-type]
    return out.getvalue()


def test_a_line_printed_outside_the_stream_is_shown_live() -> None:
    assert shown(RawLine("Warning: npm is old")) == "  Warning: npm is old\n"


def test_whole_text_blocks_end_their_lines_and_streamed_pieces_join() -> None:
    events = [TextChunk("first block"), TextChunk("Hel", delta=True), TextChunk("lo", delta=True)]

    assert shown(*events) == "first block\nHello\n"


def test_escape_sequences_in_the_agent_s_text_never_reach_the_terminal() -> None:
    assert shown(TextChunk("\x1b[2Jcleared?")) == "\ufffd[2Jcleared?\n"


def test_quiet_shows_no_agent_output() -> None:
    assert shown(RawLine("noise"), TextChunk("text"), quiet=True) == ""


def test_plain_output_is_the_same_written_directly_as_through_rich() -> None:
    events: list[AgentEvent] = [
        RawLine("npm  is old [x]"),
        TextChunk("a [b]\ttab"),
        TextChunk("end", delta=True),
    ]
    direct = shown(*events)
    out = io.StringIO()
    recording = Console(file=out, width=200, force_terminal=False, color_system=None, record=True)
    with TerminalObserver(
        lambda: recording, new_loop(iteration=1), LoopConfig(), quiet=False
    ) as observer:
        for event in events:
            observer.on_agent_event(1, event)
    assert direct == out.getvalue() == "  npm  is old [x]\na [b]   tab\nend\n"
