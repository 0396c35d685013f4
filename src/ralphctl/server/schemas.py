"""The API's request and response bodies, and the published JSON Schema of its events."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    TypeAdapter,
    field_serializer,
    field_validator,
)

from ralphctl.domain import numbers
from ralphctl.domain.events import EventType
from ralphctl.domain.money import round_costs, round_usd
from ralphctl.store.records import (
    CheckpointRecord,
    ErrorRecord,
    EventRecord,
    IterationRecord,
    LoopRecord,
)

if TYPE_CHECKING:
    from ralphctl.fleet.placement import Placement
    from ralphctl.store.metrics import Stats

#: Whole numbers and amounts as ``ralphctl.domain.numbers`` accepts them, declared in the
#: JSON Schema too (finite, bounded), then checked by the same function as flags and files.
Count = Annotated[int, Field(ge=1, le=numbers.MAX_WHOLE)]
BudgetUsd = Annotated[
    float,
    Field(gt=0, le=numbers.MAX_USD, allow_inf_nan=False, description="US dollars."),
    AfterValidator(numbers.cost),
]
_SECONDS = Field(ge=0, le=numbers.MAX_SECONDS, allow_inf_nan=False)
_DURATION_TEXT = Field(
    min_length=1, max_length=64, description='Seconds, or text such as "90s", "30m", "4h", "1h30m".'
)
#: A duration: seconds, or text such as "90s", "30m", "4h", "1h30m"; stored as seconds.
Duration = Annotated[
    Annotated[float, _SECONDS] | Annotated[str, _DURATION_TEXT],
    AfterValidator(partial(numbers.duration, allow_zero=True)),
]
PositiveDuration = Annotated[
    Annotated[float, _SECONDS] | Annotated[str, _DURATION_TEXT],
    AfterValidator(partial(numbers.duration, allow_zero=False)),
]
#: Dollars in a response, rounded to a millionth (``domain.money``): 0.45, not 0.45000000000000007.
Usd = Annotated[float, PlainSerializer(round_usd, return_type=float)]


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
    agent_command: str | None = Field(
        default=None,
        min_length=1,
        description="The command agent's command line: the prompt on stdin, or in {prompt} "
        "or {prompt_file} (docs/agents/command.md).",
    )
    max_iterations: Count | None = None
    max_runtime: PositiveDuration | None = None
    max_cost_usd: BudgetUsd | None = None
    max_tokens: Count | None = None
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
        """The loop settings this request gives, ``config`` first, the named fields over it;
        an ``agent_command`` without an agent means the command agent (as ``--agent-command``)."""
        named = self.model_dump(include=_BUDGET_FIELDS, exclude_none=True)
        settings = {**self.config, **named}
        if "agent_command" in settings:
            settings.setdefault("agent", "command")
        return settings


_BUDGET_FIELDS = {
    "agent",
    "script",
    "agent_command",
    "max_iterations",
    "max_runtime",
    "max_cost_usd",
    "max_tokens",
    "cooldown",
}


class FleetOut(BaseModel):
    """Where a fleet loop works (docs/fleet.md): ``repo`` from ``branch``, on ``loop_branch``;
    ``worker`` holds it now (null: none does: pending, between workers, or ended);
    ``waiting_for``: why a pending one waits (``waiting for a worker with label gpu``: no
    live worker has its labels), else null."""

    repo: str
    branch: str
    loop_branch: str
    labels: list[str]
    worker: str | None
    waiting_for: str | None = None


class Loop(BaseModel):
    """A loop with its running totals; ``max_iterations`` and ``max_cost_usd`` are its budgets;
    ``fleet`` says where a fleet loop works (null for every other loop)."""

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
    cost_usd: Usd
    max_cost_usd: Usd | None
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
    fleet: FleetOut | None = None

    @classmethod
    def of(cls, loop: LoopRecord, placement: Placement | None = None) -> Loop:
        return cls(
            **{name: getattr(loop, name) for name in _LOOP_COPIED},
            status=str(loop.status),
            stop_reason=None if loop.stop_reason is None else str(loop.stop_reason),
            max_iterations=_count_budget(loop.config.get("max_iterations")),
            max_cost_usd=_usd_budget(loop.config.get("max_cost_usd")),
            fleet=None if placement is None else FleetOut(**placement.to_json()),
        )

    @field_serializer("config")
    def _config_costs(self, config: dict[str, Any]) -> dict[str, Any]:
        return round_costs(config)  # type: ignore[no-any-return]


def _count_budget(value: object) -> int | None:
    """A stored count budget; None when unset (or not a whole number: not ours to guess)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _usd_budget(value: object) -> float | None:
    """A stored cost budget; None when unset (a plugin loop's) or not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


_LOOP_COPIED = set(Loop.model_fields) - {
    "fleet",
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
    cost_usd: Usd | None
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

    @field_serializer("snapshot")
    def _snapshot_costs(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        return round_costs(snapshot)  # type: ignore[no-any-return]

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

    @field_serializer("data")
    def _data_costs(self, data: dict[str, Any]) -> dict[str, Any]:
        return round_costs(data)  # type: ignore[no-any-return]


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


class TallyOut(BaseModel):
    """A number of loops and what they spent."""

    model_config = ConfigDict(from_attributes=True)

    loops: int
    cost_usd: Usd
    iterations: int = Field(description="Iterations recorded, finished or not.")
    tokens: int = Field(description="Input plus output tokens.")


class ActiveTallyOut(TallyOut):
    """The loops active now, by status, and what they have spent so far."""

    pending: int
    running: int
    paused: int
    rate_limited: int


class StatsOut(BaseModel):
    """Which totals are for the loops active now, which for every loop the store holds."""

    active: ActiveTallyOut = Field(
        description="Loops active now (pending, running, paused, rate limited)."
    )
    all_time: TallyOut = Field(description="Every loop the store holds, ended or not.")
    total_active: int = Field(deprecated=True, description="Use active.loops.")
    running: int = Field(deprecated=True, description="Use active.running.")
    paused: int = Field(deprecated=True, description="Use active.paused.")
    total_cost: Usd = Field(deprecated=True, description="All-time: use all_time.cost_usd.")
    total_iterations: int = Field(deprecated=True, description="All-time: use all_time.iterations.")
    total_tokens: int = Field(deprecated=True, description="All-time: use all_time.tokens.")

    @classmethod
    def of(cls, stats: Stats) -> StatsOut:
        everything = stats.all_time
        return cls(
            active=ActiveTallyOut(**asdict(stats.active), **stats.active_by_status),
            all_time=TallyOut.model_validate(everything),
            total_active=stats.active.loops,
            running=stats.active_by_status["running"],
            paused=stats.active_by_status["paused"],
            total_cost=everything.cost_usd,
            total_iterations=everything.iterations,
            total_tokens=everything.tokens,
        )


class LoopCostOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    loop_id: str
    name: str
    status: str
    iterations: int
    cost_usd: Usd


class CompletionOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    completed_loops: int
    average_iterations: float | None = Field(description="None until a loop has completed.")


class HourCostOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    hour: str = Field(description="The UTC hour, e.g. 2026-03-01T12:00:00Z.")
    iterations: int
    cost_usd: Usd


class HealthOut(BaseModel):
    """The server answers. ``database`` is ``degraded`` while the loop manager's writes fail
    (``database_problem`` says why); found without asking the database, so never late."""

    status: Literal["ok"] = "ok"
    version: str
    database: Literal["ok", "degraded"] = "ok"
    database_problem: str | None = None


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


class DeliveryAttempt(BaseModel):
    """One attempt to deliver a notification."""

    at: datetime
    ok: bool
    detail: str = Field(description="HTTP status, exit status, or why it failed.")
    duration_ms: int
    skipped: bool = Field(description="Nothing to deliver to here (no notify-send).")


class Notification(BaseModel):
    """One event sent to one channel (docs/notifications.md), with its deliveries."""

    model_config = ConfigDict(from_attributes=True)

    id: int = Field(description="Also sent as the X-Ralphctl-Delivery header.")
    loop_id: str
    event_seq: int = Field(description="The seq of the event it notifies.")
    event: str = Field(description="The notification's event name (parked for a usage limit).")
    channel: str = Field(description="webhook:URL, command:COMMAND or desktop.")
    status: Literal["pending", "delivered", "failed", "skipped"]
    attempts: int = Field(ge=0)
    next_attempt_at: datetime
    last_error: str | None
    outcomes: list[DeliveryAttempt]
    created_at: datetime
    delivered_at: datetime | None
    payload: dict[str, Any] = Field(description="The JSON body sent.")
