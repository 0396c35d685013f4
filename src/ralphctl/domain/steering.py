"""Steering: what the user tells a running loop, and which of it the agent has not seen yet.

A message is a ``message`` event (its ``seq`` is its id). Its delivery is recorded with the
iteration that carried it to the agent: the ``messages`` list (of seqs) in the data of an
``iteration_started`` event (fresh mode, and the ``--mode hook`` runner) or of an
``iteration_completed`` event (a Stop hook without a runner: the messages went into the
continue message of that Stop). What is pending is therefore derived from stored events
alone, and survives a restart. No imports beyond the standard library: the Stop hook
renders the section with ``section``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: The note an agent gets when it asked a question that no message answers.
NO_HUMAN_NOTE = "No human is available: choose a safe default and continue."

#: A message longer than this is refused: it is steering, not a new task.
MAX_MESSAGE_CHARS = 8000
#: The event data key that lists the seqs of the messages an iteration delivered.
DELIVERED_KEY = "messages"
HEADING = "## Messages from the user (newest last)"


class Message:
    """One message: its event seq, its text, who sent it, when (ISO 8601). A plain class, not
    a dataclass: the Stop hook imports this module."""

    __slots__ = ("at", "sender", "seq", "text")

    def __init__(self, seq: int, text: str, sender: str, at: str) -> None:
        self.seq = seq
        self.text = text
        self.sender = sender
        self.at = at

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Message) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(self.seq)

    def __repr__(self) -> str:
        return f"Message({self.seq}, {self.text!r}, {self.sender!r}, {self.at!r})"

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "text": self.text, "sender": self.sender, "at": self.at}


class InvalidMessage(ValueError):
    """A message that cannot be sent (empty, too long)."""


def checked_text(text: str) -> str:
    """``text`` stripped, or InvalidMessage saying why it cannot be sent."""
    stripped = text.strip()
    if not stripped:
        raise InvalidMessage("the message is empty")
    if len(stripped) > MAX_MESSAGE_CHARS:
        raise InvalidMessage(
            f"the message has {len(stripped)} characters; at most {MAX_MESSAGE_CHARS} are sent"
        )
    return stripped


def message_data(text: str, sender: str) -> dict[str, Any]:
    """The data of a ``message`` event."""
    return {"text": checked_text(text), "sender": sender}


def delivered_seqs(data: Mapping[str, Any]) -> set[int]:
    """The seqs an event's data says it delivered (nothing for anything malformed)."""
    seqs = data.get(DELIVERED_KEY)
    if not isinstance(seqs, list):
        return set()
    return {seq for seq in seqs if isinstance(seq, int) and not isinstance(seq, bool)}


def pending(messages: Iterable[Message], delivered: Iterable[int]) -> list[Message]:
    """The messages not delivered yet, oldest first."""
    done = set(delivered)
    return sorted((m for m in messages if m.seq not in done), key=lambda m: m.seq)


def section(texts: Sequence[str]) -> list[str]:
    """The lines of the prompt section that carries ``texts`` (oldest first), or none."""
    if not texts:
        return []
    lines = [HEADING, "Your user sent these while the loop ran; they take precedence:"]
    lines += [f"- {_item(text)}" for text in texts]
    return lines


def _item(text: str) -> str:
    """A message as one list item, its later lines indented."""
    return "\n  ".join(line.rstrip() for line in text.strip().splitlines())
