"""Which stored events make a notification, and under which name.

A notification's name is its event's type, except ``parked``: a ``waiting`` event whose loop
is rate limited (a usage limit, or a calls-per-hour limit), whose data carries ``until``, the
reset time. ``question`` is the agent asking something (docs/notifications.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from ralphctl.domain.events import EventType

PARKED = "parked"
QUESTION = "question"
#: Every name a channel or a loop may choose.
NAMES: tuple[str, ...] = tuple(
    dict.fromkeys([*(str(kind) for kind in EventType), PARKED, QUESTION])
)
#: What a channel that names no events is sent.
DEFAULT_EVENTS: tuple[str, ...] = (
    str(EventType.COMPLETED),
    str(EventType.FAILED),
    str(EventType.BLOCKED),
    PARKED,
    str(EventType.CIRCUIT_BREAKER_TRIPPED),
    str(EventType.BUDGET_WARNING),
    QUESTION,
)


def notification_name(event_type: str, data: Mapping[str, object]) -> str:
    """The name a channel chooses this stored event by."""
    if event_type == EventType.WAITING and data.get("status") == "rate_limited":
        return PARKED
    return event_type


def event_names(value: object) -> tuple[str, ...]:
    """A list of known event names (``NAMES``); ValueError naming the unknown ones."""
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ValueError(f"must be a list of event names, not {value!r}")
    unknown = [name for name in value if name not in NAMES]
    if unknown:
        shown = ", ".join(repr(name) for name in unknown)
        raise ValueError(f"unknown event {shown}; known: {', '.join(NAMES)}")
    return tuple(dict.fromkeys(str(name) for name in value))
