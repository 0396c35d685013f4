"""The loop events every body publishes; stored with a global ``seq`` before delivery."""

from __future__ import annotations

from enum import StrEnum


class EventType(StrEnum):
    STARTED = "started"
    RESUMED = "resumed"
    ITERATION_STARTED = "iteration_started"
    ITERATION_COMPLETED = "iteration_completed"
    COMPLETION_SIGNAL_DETECTED = "completion_signal_detected"
    TOKENS_USED = "tokens_used"
    COST_INCURRED = "cost_incurred"
    CHECKPOINT_CREATED = "checkpoint_created"
    CIRCUIT_BREAKER_TRIPPED = "circuit_breaker_tripped"
    WAITING = "waiting"
    ERROR = "error"
    WARNING = "warning"
    STATE_CHANGED = "state_changed"
    PAUSED = "paused"
    STOPPED = "stopped"
    COMPLETED = "completed"
    BLOCKED = "blocked"
    FAILED = "failed"
