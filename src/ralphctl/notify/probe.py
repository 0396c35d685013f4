"""``ralphctl notify test``: a test notification sent to the configured channels at once,
outside the outbox, each channel's outcome returned."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from ralphctl.notify.channels import Outcome, send
from ralphctl.notify.config import Channel, NotifySettings

TEST_EVENT = "test"


class UnknownChannel(ValueError):
    """The channel asked for is not configured."""


def probe_payload() -> dict[str, Any]:
    return {
        "event": TEST_EVENT,
        "event_type": TEST_EVENT,
        "seq": 0,
        "loop": {"id": None, "name": "ralphctl notify test"},
        "data": {"message": "a test notification from ralphctl"},
        "timestamp": datetime.now(UTC).isoformat(),
    }


def chosen_channels(settings: NotifySettings, only: str | None) -> list[Channel]:
    """Every configured channel, or the one whose key is (or starts with) ``only``."""
    if only is None:
        return list(settings.channels)
    exact = [channel for channel in settings.channels if channel.key == only]
    chosen = exact or [c for c in settings.channels if c.key.startswith(only)]
    if not chosen:
        known = ", ".join(channel.key for channel in settings.channels) or "none configured"
        raise UnknownChannel(f"no channel {only!r}; configured: {known}")
    return chosen


def send_test(channels: list[Channel]) -> list[tuple[Channel, Outcome]]:
    body = orjson.dumps(probe_payload())
    return [
        (channel, send(channel, body, event=TEST_EVENT, delivery=f"test-{index}"))
        for index, channel in enumerate(channels, 1)
    ]
