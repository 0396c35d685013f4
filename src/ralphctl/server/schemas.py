"""The API's request and response bodies, and the published JSON Schema of its events."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from ralphctl.domain.events import EventType
from ralphctl.store.records import (
    CheckpointRecord,
    ErrorRecord,
    EventRecord,
    IterationRecord,
    LoopRecord,
)

Duration = float | str  # seconds, or text such as "90s", "30m", "4h", "1h30m"


class LoopCreate(BaseModel):
    """Start a loop. Budgets not given come from the user's config and the work dir's
    ``ralphctl.toml``, as for ``ralphctl run``; ``config`` takes any other loop setting."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(min_length=1, description="What the agent is asked to do.")
    workdir: str = Field(description="An existing directory, as an absolute path.")
    name: str | None = Field(default=None, min_length=1)
    mode: Literal["fresh", "hook"] = "fresh"
    workflow: str | None = Field(default=None, min_length=1)
    queue: bool = Field(
        default=True, description="Queue the loop as pending when the concurrency limit is hit."
    )
    worktree: bool = Field(
        default=False, description="Run in a new git worktree of workdir, beside it."
    )
    agent: str | None = Field(default=None, min_length=1)
    script: str | None = Field(default=None, description="The scripted agent's script.")
    max_iterations: int | None = Field(default=None, ge=1)
    max_runtime: Duration | None = None
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, ge=1)
    cooldown: Duration | None = None
    config: dict[str, Any] = Field(
        default_factory=dict, description="Any other LoopConfig setting, by its name."
    )

    @field_validator("task")
    @classmethod
    def _not_blank(cls, task: str) -> str:
        if not task.strip():
            raise ValueError("must not be blank")
        return task

    @field_validator("workdir")
    @classmethod
    def _existing_directory(cls, workdir: str) -> str:
        path = Path(workdir)
        if not path.is_absolute():
            raise ValueError(f"must be an absolute path, not {workdir!r}")
        if not path.is_dir():
            raise ValueError(f"{workdir} is not an existing directory")
        return workdir

    def overrides(self) -> dict[str, Any]:
        """The loop settings this request gives, ``config`` first, the named fields over it."""
        named = self.model_dump(include=_BUDGET_FIELDS, exclude_none=True)
        return {**self.config, **named}


_BUDGET_FIELDS = {
    "agent",
    "script",
    "max_iterations",
    "max_runtime",
    "max_cost_usd",
    "max_tokens",
    "cooldown",
}


class Loop(BaseModel):
    """A loop with its running totals; ``max_iterations`` and ``max_cost_usd`` are its budgets."""

    id: str
    name: str
    mode: str
    agent: str
    workdir: str
    task: str
    workflow: str | None
    status: str
    stop_reason: str | None
    stop_detail: str | None
    iteration: int
    max_iterations: int | None
    cost_usd: float
    max_cost_usd: float | None
    tokens_input: int
    tokens_output: int
    tokens_cache_read: int
    tokens_cache_write: int
    consecutive_errors: int
    runtime_s: float
    rate_limited_until: datetime | None
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    updated_at: datetime | None
    config: dict[str, Any]

    @classmethod
    def of(cls, loop: LoopRecord) -> Loop:
        return cls(
            **{name: getattr(loop, name) for name in _LOOP_COPIED},
            status=str(loop.status),
            stop_reason=None if loop.stop_reason is None else str(loop.stop_reason),
            max_iterations=loop.config.get("max_iterations"),
            max_cost_usd=loop.config.get("max_cost_usd"),
        )


_LOOP_COPIED = set(Loop.model_fields) - {
    "status",
    "stop_reason",
    "max_iterations",
    "max_cost_usd",
}


class IterationOut(BaseModel):
    loop_id: str
    n: int
    status: str
    started_at: datetime
    completed_at: datetime | None
    duration_ms: int | None
    tokens_input: int
    tokens_output: int
    tokens_cache_read: int
    tokens_cache_write: int
    cost_usd: float | None
    cost_source: str | None
    exit_code: int | None
    completion_signal_found: bool
    blocked_reason: str | None
    error_message: str | None
    output_summary: str
    files_changed: int | None
    num_turns: int | None
    permission_denials: list[dict[str, Any]]
    gate_results: list[dict[str, Any]] | None

    @classmethod
    def of(cls, iteration: IterationRecord) -> IterationOut:
        return cls(**{name: getattr(iteration, name) for name in cls.model_fields})


class CheckpointOut(BaseModel):
    id: int
    loop_id: str
    iteration: int
    commit_sha: str
    snapshot: dict[str, Any]
    created_at: datetime

    @classmethod
    def of(cls, checkpoint: CheckpointRecord) -> CheckpointOut:
        return cls(**{name: getattr(checkpoint, name) for name in cls.model_fields})


class ErrorOut(BaseModel):
    id: int
    loop_id: str
    iteration: int | None
    error_type: str
    message: str
    context: dict[str, Any]
    created_at: datetime

    @classmethod
    def of(cls, error: ErrorRecord) -> ErrorOut:
        return cls(**{name: getattr(error, name) for name in cls.model_fields})


class Event(BaseModel):
    """One stored event, as REST and the WebSocket send it."""

    event_type: str = Field(
        description="What happened; one of: " + ", ".join(EventType),
        examples=list(EventType),
    )
    loop_id: str
    seq: int = Field(ge=1, description="Global and strictly increasing: resume after it.")
    data: dict[str, Any] = Field(description="The event's details; keys depend on event_type.")
    timestamp: datetime = Field(description="When the event was stored (UTC).")

    @classmethod
    def of(cls, event: EventRecord) -> Event:
        return cls(**{name: getattr(event, name) for name in cls.model_fields})


class SnapshotData(BaseModel):
    loops: list[Loop]
    last_seq: int = Field(description="The newest stored event when the snapshot was taken.")


class Snapshot(BaseModel):
    """The first WebSocket message: every loop as it is now."""

    event_type: Literal["snapshot"] = "snapshot"
    loop_id: None = None
    seq: None = None
    data: SnapshotData
    timestamp: datetime


class StatsOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    total_active: int
    running: int
    paused: int
    total_cost: float
    total_iterations: int
    total_tokens: int


class LoopCostOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    loop_id: str
    name: str
    status: str
    iterations: int
    cost_usd: float


class CompletionOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    completed_loops: int
    average_iterations: float | None = Field(description="None until a loop has completed.")


class HourCostOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    hour: str = Field(description="The UTC hour, e.g. 2026-03-01T12:00:00Z.")
    iterations: int
    cost_usd: float


class HealthOut(BaseModel):
    status: Literal["ok"] = "ok"
    version: str


#: What the WebSocket sends: one snapshot, then events.
WireMessage = TypeAdapter(Snapshot | Event)


def events_json_schema() -> dict[str, Any]:
    """The published JSON Schema of ``/ws/events`` messages (and of REST events)."""
    schema = WireMessage.json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "ralphctl/events.schema.json",
        "title": "ralphctl event stream message",
        "description": (
            "A message of /ws/events: first one snapshot, then every event in seq order."
            " /api/events returns lists of Event."
        ),
        **schema,
    }
