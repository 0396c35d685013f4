"""Records with every field filled, so that round trips check every column."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.store.records import IterationRecord, LoopRecord

#: A non-UTC offset: the store must hand back the same instant, in UTC.
PLUS_TWO = timezone(timedelta(hours=2))
T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def new_loop(loop_id: str = "loop-0001", **changes: Any) -> LoopRecord:
    """A pending loop, as the engine would create it."""
    fields: dict[str, Any] = {
        "id": loop_id,
        "name": "fix the tests",
        "mode": "fresh",
        "agent": "claude",
        "workdir": "/work/project",
        "task": "Make `make test` pass.",
        "config": {"max_iterations": 10, "completion": {"promise": "DONE"}},
        "status": LoopStatus.PENDING,
        "created_at": T0,
    }
    return LoopRecord(**(fields | changes))


def ended_loop(loop_id: str = "loop-0002") -> LoopRecord:
    """A loop with every optional field set."""
    return new_loop(
        loop_id,
        workflow="bugfix",
        status=LoopStatus.COMPLETED,
        stop_reason=StopReason.COMPLETION,
        stop_detail="promise DONE found",
        iteration=3,
        cost_usd=0.4217,
        tokens_input=12_000,
        tokens_output=3_400,
        tokens_cache_read=50_000,
        tokens_cache_write=7_000,
        consecutive_errors=1,
        runtime_s=93.5,
        breaker_state={"no_progress": 0, "same_error": 1},
        rate_limited_until=datetime(2026, 3, 1, 15, 0, tzinfo=PLUS_TWO),
        agent_session_id="8f0c2a2e-session",
        runner_pid=4242,
        runner_host="build-box",
        started_at=T0 + timedelta(seconds=1),
        ended_at=T0 + timedelta(minutes=2),
    )


def started_iteration(loop_id: str, n: int) -> IterationRecord:
    return IterationRecord(loop_id=loop_id, n=n, started_at=T0 + timedelta(minutes=n))


def finished_iteration(loop_id: str, n: int) -> IterationRecord:
    """Iteration ``n`` as the runner records it when the agent exits."""
    return IterationRecord(
        loop_id=loop_id,
        n=n,
        started_at=T0 + timedelta(minutes=n),
        status="ok",
        completed_at=T0 + timedelta(minutes=n, seconds=30),
        duration_ms=30_000,
        tokens_input=1_000 * n,
        tokens_output=200,
        tokens_cache_read=5_000,
        tokens_cache_write=300,
        cost_usd=0.0125,
        cost_source="reported",
        exit_code=0,
        completion_signal_found=n == 3,
        blocked_reason=None,
        error_message=None,
        output_summary=f"iteration {n}: edited two files",
        files_changed=2,
        agent_session_id="8f0c2a2e-session",
        num_turns=4,
        permission_denials=[{"tool_name": "Bash", "tool_use_id": "toolu_1", "detail": "rm"}],
        agent_pid=40_000 + n,
        agent_started_at=(T0 + timedelta(minutes=n, milliseconds=20)).astimezone(PLUS_TWO),
    )
