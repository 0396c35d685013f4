"""The log line of each event: lifecycle at INFO, trouble at WARNING or ERROR with its reason,
per-iteration detail at DEBUG."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from ralphctl.engine.eventlog import log_event
from ralphctl.store.records import EventRecord


def event(event_type: str, **data: object) -> EventRecord:
    return EventRecord(
        seq=1, loop_id="abc123", event_type=event_type, data=dict(data), timestamp=datetime.now(UTC)
    )


@pytest.mark.parametrize(
    ("record", "level", "line"),
    [
        (event("started", iteration=0, config={}), "INFO", "loop abc123 started (iteration: 0)"),
        (event("paused", reason=None, iteration=2), "INFO", "loop abc123 paused (iteration: 2)"),
        (
            event("failed", reason="circuit_breaker", iteration=5, cost_usd=1.0),
            "ERROR",
            "loop abc123 failed (reason: circuit_breaker, iteration: 5)",
        ),
        (
            event("error", iteration=3, message="agent crashed"),
            "ERROR",
            "loop abc123 error (message: agent crashed, iteration: 3)",
        ),
        (
            event("warning", message="no price"),
            "WARNING",
            "loop abc123 warning (message: no price)",
        ),
        (
            event("tokens_used", iteration=1, tokens=5),
            "DEBUG",
            "loop abc123 tokens_used (iteration: 1)",
        ),
        (event("from_a_newer_version"), "DEBUG", "loop abc123 from_a_newer_version"),
    ],
)
def test_each_event_is_one_line_at_its_level(caplog, record, level, line):
    caplog.set_level(logging.DEBUG, logger="ralphctl")

    log_event(record)

    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [(level, line)]
