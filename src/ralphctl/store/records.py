"""Plain records the store reads and writes; the engine and the faces never see ORM objects."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from ralphctl.domain.states import LoopStatus, StopReason


@dataclass(frozen=True, slots=True)
class LoopRecord:
    """One loop with its budgets' running totals. ``iteration`` counts recorded iterations."""

    id: str
    name: str
    mode: str  # "fresh" | "hook"
    agent: str
    workdir: str
    task: str
    config: dict[str, Any]
    status: LoopStatus
    created_at: datetime
    workflow: str | None = None
    stop_reason: StopReason | None = None
    stop_detail: str | None = None
    iteration: int = 0
    cost_usd: float = 0.0
    tokens_input: int = 0
    tokens_output: int = 0
    tokens_cache_read: int = 0
    tokens_cache_write: int = 0
    consecutive_errors: int = 0
    runtime_s: float = 0.0
    breaker_state: dict[str, Any] | None = None
    rate_limited_until: datetime | None = None
    agent_session_id: str | None = None
    runner_pid: int | None = None
    runner_host: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class IterationRecord:
    """One agent run. ``status`` is running, ok, error, timeout or interrupted."""

    loop_id: str
    n: int
    started_at: datetime
    status: str = "running"
    completed_at: datetime | None = None
    duration_ms: int | None = None
    tokens_input: int = 0
    tokens_output: int = 0
    tokens_cache_read: int = 0
    tokens_cache_write: int = 0
    cost_usd: float | None = None
    # "reported" | "estimated" | "recovered" (read back after the runner died) | None: unknown
    cost_source: str | None = None
    exit_code: int | None = None
    completion_signal_found: bool = False
    blocked_reason: str | None = None
    error_message: str | None = None
    output_summary: str = ""
    files_changed: int | None = None
    agent_session_id: str | None = None
    num_turns: int | None = None
    permission_denials: list[dict[str, Any]] = field(default_factory=list)
    gate_results: list[dict[str, Any]] | None = (
        None  # verification gates run on a claimed completion
    )
    signals: dict[str, Any] | None = None  # what the response analyzer noticed
    # The agent process (its pid is its process group's id) and when it started: what lets a
    # later process recognise, and stop, an agent whose runner died (engine/orphans).
    agent_pid: int | None = None
    agent_started_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class RecoveredUsage:
    """What an interrupted iteration's agent spent, read back from what it left (its
    transcript): recorded on the iteration with ``cost_source = "recovered"``."""

    tokens_input: int = 0
    tokens_output: int = 0
    tokens_cache_read: int = 0
    tokens_cache_write: int = 0
    cost_usd: float | None = None
    agent_session_id: str | None = None


@dataclass(frozen=True, slots=True)
class EventRecord:
    """A stored event; ``seq`` is global and monotonically increasing."""

    seq: int
    loop_id: str
    event_type: str
    data: dict[str, Any]
    timestamp: datetime


@dataclass(frozen=True, slots=True)
class ErrorRecord:
    id: int
    loop_id: str
    iteration: int | None
    error_type: str
    message: str
    context: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """A git commit taken by the loop, with a snapshot of the loop's totals at that point."""

    id: int
    loop_id: str
    iteration: int
    commit_sha: str
    snapshot: dict[str, Any]
    created_at: datetime


def loop_summary(loop: LoopRecord) -> dict[str, Any]:
    """The loop's totals, as a checkpoint's snapshot and the end events hold them."""
    return {
        "iteration": loop.iteration,
        "cost_usd": loop.cost_usd,
        "tokens": loop.tokens_input + loop.tokens_output,
        "runtime_s": round(loop.runtime_s, 3),
    }


def record_values(record: Any) -> dict[str, Any]:
    """A record's fields as a row's column values (column names are field names)."""
    return {f.name: getattr(record, f.name) for f in fields(record)}


def loop_values(loop: LoopRecord) -> dict[str, Any]:
    """A loop's row values: its status and stop reason as their strings."""
    values = record_values(loop)
    values["status"] = str(loop.status)
    values["stop_reason"] = None if loop.stop_reason is None else str(loop.stop_reason)
    return values


def loop_from_row(values: dict[str, Any]) -> LoopRecord:
    """The loop a row (its column values) holds."""
    values["status"] = LoopStatus(values["status"])
    if values["stop_reason"] is not None:
        values["stop_reason"] = StopReason(values["stop_reason"])
    return LoopRecord(**values)
