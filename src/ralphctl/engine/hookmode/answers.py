"""``on_question = wait`` in a hook-mode loop: the session stops at the question, the loop
waits for the answer, then the same session goes on with it.

A Stop hook cannot wait for a person (Claude Code waits for the hook, and its timeout is
minutes), so the runner allows the Stop that asks (``Stops``), the ``claude`` process ends,
and the loop is ``paused`` with the question in its detail until a ``ralphctl tell`` message
is pending or ``question_timeout`` passes; a stop or pause request ends the wait. The session
is then resumed (``--resume``) with the continue message, the answer (or the safe-default
note) after it. A runner shut down meanwhile leaves the loop paused: its next runner
continues the session with the continue message (and the Stop after it delivers the answer).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from ralphctl.domain.conditions import ExternalSignal
from ralphctl.domain.events import EventType
from ralphctl.domain.states import LoopStatus, transition
from ralphctl.domain.steering import NO_HUMAN_NOTE, Message, section
from ralphctl.engine.hookmode.history import History

WAIT_POLL_S = 1.0  # how often the wait looks for an answer, a stop or a pause request
TIMED_OUT = "no answer to the agent's question in time: it chooses a safe default"


@dataclass(frozen=True, slots=True)
class Asked:
    """The agent ended iteration ``iteration`` asking ``question``; ``notes``: what its next
    turn is told about it (the analyzer's, as a block's reason carries them)."""

    iteration: int
    question: str
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Answer:
    """How the wait ended: the user's pending ``messages`` (none: timed out, or ended by
    ``signal`` or an interrupt)."""

    messages: tuple[Message, ...] = ()
    signal: ExternalSignal | None = None


async def wait_for_answer(
    history: History,
    asked: Asked,
    timeout_s: float,
    interrupt: asyncio.Event,
    external: Callable[[], ExternalSignal | None],
) -> Answer:
    """Keep the loop paused until the user answers, ``timeout_s`` passes, a stop or pause
    is requested, or ``interrupt`` is set (the caller sees it). The loop is ``running`` again
    when this returns."""
    until = datetime.now(UTC) + timedelta(seconds=timeout_s)
    detail = f"waiting until {until:%Y-%m-%d %H:%M} UTC for an answer: {asked.question}"
    _set_status(history, LoopStatus.PAUSED, detail)
    waiting = {"until": until.isoformat(), "reason": "question", "status": "paused"}
    history.publish(EventType.WAITING, waiting | {"question": asked.question})
    answer: Answer | None = None
    try:
        while answer is None and not interrupt.is_set() and datetime.now(UTC) < until:
            left = (until - datetime.now(UTC)).total_seconds()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(interrupt.wait(), min(left, WAIT_POLL_S))
            if interrupt.is_set():
                break
            if (signal := external()) is not None:
                answer = Answer(signal=signal)
            elif pending := await history.pending():
                answer = Answer(messages=tuple(pending))
    finally:
        _set_status(history, LoopStatus.RUNNING, None)
    if answer is None and not interrupt.is_set():
        history.warn(TIMED_OUT)
    return answer or Answer()


def answered_prompt(continue_message: str, asked: Asked, messages: Sequence[str]) -> str:
    """What the resumed session is told: the continue message, the notes (without "no human
    is available" once answered), then the user's messages."""
    notes = [note for note in asked.notes if not (messages and note == NO_HUMAN_NOTE)]
    if not messages and NO_HUMAN_NOTE not in notes:
        notes.append(NO_HUMAN_NOTE)
    told = section(messages)
    return "\n\n".join([continue_message, *notes, *(["\n".join(told)] if told else [])])


def _set_status(history: History, status: LoopStatus, detail: str | None) -> None:
    transition(history.loop.status, status)
    history.save_loop(replace(history.loop, status=status, stop_detail=detail))
    history.write_state()
