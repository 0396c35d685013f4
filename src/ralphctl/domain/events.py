"""The loop events every body publishes; stored with a global ``seq`` before delivery."""

from __future__ import annotations

from enum import StrEnum


class EventType(StrEnum):
    CREATED = "created"  # stored by the manager; pending until it starts
    STARTED = "started"
    RESUMED = "resumed"
    ITERATION_STARTED = "iteration_started"
    ITERATION_COMPLETED = "iteration_completed"
    COMPLETION_SIGNAL_DETECTED = "completion_signal_detected"
    TOKENS_USED = "tokens_used"
    COST_INCURRED = "cost_incurred"
    CHECKPOINT_CREATED = "checkpoint_created"
    CIRCUIT_BREAKER_TRIPPED = "circuit_breaker_tripped"
    BUDGET_WARNING = "budget_warning"  # once per budget and loop, when 80 % of it is spent
    WAITING = "waiting"
    MESSAGE = "message"  # the user told the loop something (``ralphctl tell``); delivered once
    QUESTION = "question"  # the agent asked the absent user something
    ERROR = "error"
    WARNING = "warning"
    STATE_CHANGED = "state_changed"
    PAUSE_REQUESTED = "pause_requested"  # takes effect between iterations
    PAUSED = "paused"
    SUSPENDED = "suspended"  # left active with no runner (the manager shut down); resumed on start
    STOPPED = "stopped"
    COMPLETED = "completed"
    BLOCKED = "blocked"
    FAILED = "failed"
