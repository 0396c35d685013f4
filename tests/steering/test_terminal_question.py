"""What the terminal shows of steering: the agent's question (even when quiet), how to answer
it while the loop waits, and the messages an iteration hands over."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

from rich.console import Console

from ralphctl.cli.ui import TerminalObserver
from ralphctl.domain.config import LoopConfig
from ralphctl.store.records import EventRecord
from tests.store.factories import new_loop

T0 = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)


def shown(*events: tuple[str, dict[str, Any]], quiet: bool = False) -> str:
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False, color_system=None)
    loop = new_loop(iteration=1)
    with TerminalObserver(lambda: console, loop, LoopConfig(), quiet=quiet) as observer:
        for seq, (kind, data) in enumerate(events, start=1):
            observer.on_event(EventRecord(seq, loop.id, kind, data, T0))
    return out.getvalue()


def test_a_question_and_the_wait_for_its_answer_show_even_when_quiet() -> None:
    question = ("question", {"iteration": 1, "question": "Tabs or [b]spaces[/b]?"})
    waiting = ("waiting", {"until": "2026-11-23T10:30:00+00:00", "question": "Tabs?"})

    text = shown(question, waiting, quiet=True)

    assert "the agent asks: Tabs or [b]spaces[/b]?" in text
    assert "waiting until 2026-11-23T10:30:00+00:00" in text
    assert "ralphctl tell " in text


def test_a_wait_for_a_usage_limit_is_not_shown_as_a_question() -> None:
    assert "tell" not in shown(("waiting", {"until": "soon", "reason": "usage limit"}))


def test_an_iteration_that_hands_over_messages_says_how_many() -> None:
    text = shown(("iteration_started", {"iteration": 2, "messages": [4, 9]}))

    assert "2 message(s) from you go to the agent now" in text
