"""Steering a loop from outside: the one ``tell`` service of every face, and what is pending.

``tell`` stores the message as a ``message`` event. A fresh loop's runner reads the pending
messages from the store before each iteration (its ``Inbox``) and lists their seqs in
the iteration's start event. A same-session loop also gets the message in its inbox beside
the tracker (``hook.inbox``), which the Stop hook empties into its next continue message, with
or without a runner. The rule of what is pending is ``domain.steering``'s.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from ralphctl.domain.events import EventType
from ralphctl.domain.states import LoopStatus
from ralphctl.domain.steering import Message, delivered_seqs, message_data, pending
from ralphctl.store.records import EventRecord, LoopRecord

if TYPE_CHECKING:
    from ralphctl.store.repository import Store

#: The events whose data may list delivered message seqs (``domain.steering``).
_DELIVERING = (str(EventType.ITERATION_STARTED), str(EventType.ITERATION_COMPLETED))
_READ = (str(EventType.MESSAGE), *_DELIVERING)

log = logging.getLogger(__name__)


class SteeringRefused(ValueError):
    """The loop cannot take a message (it has completed)."""


def tell(store: Store, loop: LoopRecord, text: str, sender: str) -> EventRecord:
    """Send ``text`` to the loop's agent (InvalidMessage, SteeringRefused); the stored event."""
    if loop.status is LoopStatus.COMPLETED:
        raise SteeringRefused(f"loop {loop.id} has completed: no agent will read the message")
    data = message_data(text, sender)
    stored = store.append_event(loop.id, str(EventType.MESSAGE), data)
    if loop.mode == "hook" and loop.agent_session_id:
        try:
            _post_to_session(loop, stored.seq, data["text"])
        except OSError as exc:  # recorded all the same: it shows as pending
            log.warning(
                "loop %s: cannot hand message %d to its session: %s", loop.id, stored.seq, exc
            )
    return stored


def default_sender() -> str:
    """Who is telling, as far as this process knows: the login name."""
    return os.environ.get("USER") or os.environ.get("LOGNAME") or "cli"


def messages(store: Store, loop_id: str) -> list[tuple[Message, int | None]]:
    """Every message of the loop, oldest first, each with the iteration that delivered it
    (None: pending)."""
    sent, delivered = _read(store, loop_id)
    return [(m, delivered.get(m.seq)) for m in sent]


def pending_messages(store: Store, loop_id: str) -> list[Message]:
    """The messages the agent has not been given yet, oldest first."""
    sent, delivered = _read(store, loop_id)
    return pending(sent, delivered)


def messages_json(store: Store, loop_id: str) -> list[dict[str, Any]]:
    """``messages`` as JSON objects (with ``delivered`` and its ``iteration``), for the faces."""
    return [
        m.to_json() | {"delivered": n is not None, "iteration": n}
        for m, n in messages(store, loop_id)
    ]


class Inbox:
    """A runner's view of its loop's pending messages, kept up to date by reading only the
    events stored since its last look: the look before each iteration costs the same at the
    thousandth iteration as at the first. Events commit in ``seq`` order (``store``), so none
    is missed; delivered messages are forgotten."""

    def __init__(self, loop_id: str) -> None:
        self.loop_id = loop_id
        self._waiting: dict[int, Message] = {}  # sent, not delivered yet, by seq
        self._seen = 0  # the newest seq read

    def pending(self, store: Store) -> list[Message]:
        """The messages the agent has not been given yet, oldest first (on the store's thread)."""
        for event in store.events_of(self.loop_id, _READ, after=self._seen):
            self._seen = max(self._seen, event.seq)
            if event.event_type == EventType.MESSAGE:
                self._waiting[event.seq] = _message(event)
            else:
                for seq in delivered_seqs(event.data):
                    self._waiting.pop(seq, None)
        return pending(self._waiting.values(), ())


def _read(store: Store, loop_id: str) -> tuple[list[Message], dict[int, int]]:
    """The loop's messages, and the iteration each delivered one went to, by seq."""
    sent: list[Message] = []
    delivered: dict[int, int] = {}
    for event in store.events_of(loop_id, _READ):
        if event.event_type == EventType.MESSAGE:
            sent.append(_message(event))
            continue
        n = event.data.get("iteration")
        n = n if isinstance(n, int) else 0
        if event.event_type == EventType.ITERATION_COMPLETED:
            n += 1  # handed over in the continue message of that iteration's Stop
        for seq in delivered_seqs(event.data):
            delivered.setdefault(seq, n)
    return sent, delivered


def _message(event: EventRecord) -> Message:
    data = event.data
    text, sender = str(data.get("text", "")), str(data.get("sender", ""))
    return Message(event.seq, text, sender, event.timestamp.isoformat())


def _post_to_session(loop: LoopRecord, seq: int, text: str) -> None:
    """Put the message in the session's inbox, if its tracker is there (else the session has
    gone: the message stays recorded, and pending)."""
    from ralphctl.hook import paths
    from ralphctl.hook.inbox import post
    from ralphctl.hook.lock import FileLock

    session = loop.agent_session_id
    if session is None or not paths.valid_session_id(session):
        return
    tracker = paths.tracker_path(loop.workdir, session)
    if not os.path.exists(tracker):
        return
    with FileLock(paths.lock_for(tracker)):
        post(tracker, seq, text)
