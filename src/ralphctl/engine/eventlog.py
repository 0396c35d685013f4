"""What the log says about each loop: its lifecycle, its warnings and errors.

Every event the manager publishes passes here. Lifecycle events (created, started, paused,
resumed, suspended, stopped, completed) are INFO; warnings, blocked loops and breaker trips
WARNING; errors and failed loops ERROR, with their reason; the per-iteration detail (tokens,
cost, iterations) DEBUG.
"""

from __future__ import annotations

import logging
from typing import Any

from ralphctl.domain.events import EventType
from ralphctl.store.records import EventRecord

log = logging.getLogger("ralphctl.loops")

LEVEL_OF: dict[str, int] = {
    EventType.CREATED: logging.INFO,
    EventType.STARTED: logging.INFO,
    EventType.RESUMED: logging.INFO,
    EventType.PAUSE_REQUESTED: logging.INFO,
    EventType.PAUSED: logging.INFO,
    EventType.SUSPENDED: logging.INFO,
    EventType.STOPPED: logging.INFO,
    EventType.COMPLETED: logging.INFO,
    EventType.WAITING: logging.INFO,
    EventType.WARNING: logging.WARNING,
    EventType.BLOCKED: logging.WARNING,
    EventType.CIRCUIT_BREAKER_TRIPPED: logging.WARNING,
    EventType.ERROR: logging.ERROR,
    EventType.FAILED: logging.ERROR,
}
#: The details worth a log line, in this order, when an event has them.
SHOWN = ("reason", "message", "detail", "iteration", "until", "workdir", "agent")


def log_event(event: EventRecord) -> None:
    """One line for ``event``: ``loop <id> <type> (reason: …, iteration: 3)``."""
    level = LEVEL_OF.get(event.event_type, logging.DEBUG)
    if log.isEnabledFor(level):
        log.log(level, "loop %s %s%s", event.loop_id, event.event_type, _details(event.data))


def _details(data: dict[str, Any]) -> str:
    shown = [f"{key}: {data[key]}" for key in SHOWN if data.get(key) not in (None, "")]
    return f" ({', '.join(shown)})" if shown else ""
