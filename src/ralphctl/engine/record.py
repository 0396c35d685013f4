"""Turn a finished agent run and its assessment into the records and events the store keeps."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from ralphctl.agents import process
from ralphctl.domain.analyzer import Signals
from ralphctl.domain.events import EventType
from ralphctl.domain.model import IterationResult
from ralphctl.engine.assess import Assessment
from ralphctl.engine.gates import to_json as gates_json
from ralphctl.engine.transcript_writer import TranscriptSummary
from ralphctl.store.records import IterationRecord, LoopRecord

SUMMARY_CHARS = 200

Event = tuple[str, dict[str, Any]]


def iteration_status(result: IterationResult, assessment: Assessment | None) -> str:
    """ok, error, timeout, interrupted, or rate_limited (a usage limit is not an error)."""
    if result.interrupted:
        return "interrupted"
    if assessment is not None and assessment.usage_limit is not None:
        return "rate_limited"
    if result.timed_out:
        return "timeout"
    return "error" if result.is_error else "ok"


def finished_iteration(
    started: IterationRecord, result: IterationResult, assessment: Assessment | None
) -> IterationRecord:
    status = iteration_status(result, assessment)
    cost = assessment.cost if assessment else None
    return replace(
        started,
        status=status,
        completed_at=datetime.now(UTC),
        duration_ms=result.duration_ms,
        tokens_input=result.tokens.input,
        tokens_output=result.tokens.output,
        tokens_cache_read=result.tokens.cache_read,
        tokens_cache_write=result.tokens.cache_write,
        cost_usd=cost.usd if cost else result.cost_usd,
        cost_source=str(cost.source) if cost and cost.source else None,
        exit_code=result.exit_code,
        completion_signal_found=bool(assessment and assessment.claimed),
        blocked_reason=assessment.blocked_reason if assessment else None,
        error_message=result.error_message if result.is_error else None,
        output_summary=summary(result),
        files_changed=None if assessment is None else int(assessment.progressed),
        agent_session_id=result.session_id or started.agent_session_id,
        num_turns=result.num_turns,
        permission_denials=[
            {"tool_name": d.tool_name, "tool_use_id": d.tool_use_id, "detail": d.detail}
            for d in result.permission_denials
        ],
        gate_results=gates_json(assessment.gate_results) if assessment else None,
        signals=signals_json(assessment.signals) if assessment else None,
    )


def loop_totals(
    loop: LoopRecord, done: IterationRecord, *, runtime_s: float, breaker: dict[str, Any] | None
) -> LoopRecord:
    """The loop after this iteration: totals added, streaks updated."""
    return replace(
        loop,
        iteration=done.n,
        cost_usd=loop.cost_usd + (done.cost_usd or 0.0),
        tokens_input=loop.tokens_input + done.tokens_input,
        tokens_output=loop.tokens_output + done.tokens_output,
        tokens_cache_read=loop.tokens_cache_read + done.tokens_cache_read,
        tokens_cache_write=loop.tokens_cache_write + done.tokens_cache_write,
        consecutive_errors=consecutive_errors(loop.consecutive_errors, done.status),
        runtime_s=runtime_s,
        agent_session_id=done.agent_session_id or loop.agent_session_id,
        breaker_state=breaker if breaker is not None else loop.breaker_state,
    )


def consecutive_errors(before: int, status: str) -> int:
    """Errors and timeouts count; interrupts and usage limits leave the count as it was."""
    if status in ("error", "timeout"):
        return before + 1
    return before if status in ("interrupted", "rate_limited") else 0


def iteration_events(
    done: IterationRecord, result: IterationResult, loop: LoopRecord, permission_mode: str
) -> list[Event]:
    """The events of a finished iteration, stored in the same transaction as the iteration."""
    n = done.n
    events: list[Event] = [
        (
            EventType.ITERATION_COMPLETED,
            {
                "iteration": n,
                "status": done.status,
                "duration_ms": done.duration_ms,
                "cost_usd": done.cost_usd,
                "cost_source": done.cost_source,
                "tokens": result.tokens.total,
                "completion_signal_found": done.completion_signal_found,
                "blocked_reason": done.blocked_reason,
                "error": done.error_message,
                "permission_denials": len(done.permission_denials),
                "gates": done.gate_results,
            },
        )
    ]
    tokens = result.tokens
    if tokens.total:
        total = loop.tokens_input + loop.tokens_output
        usage = {"input": tokens.input, "output": tokens.output}
        cache = {"cache_read": tokens.cache_read, "cache_write": tokens.cache_write}
        events.append((EventType.TOKENS_USED, {"iteration": n, **usage, **cache, "total": total}))
    if done.cost_usd:
        cost = {"cost_usd": done.cost_usd, "source": done.cost_source, "total_usd": loop.cost_usd}
        events.append((EventType.COST_INCURRED, {"iteration": n, **cost}))
    if done.completion_signal_found:
        events.append((EventType.COMPLETION_SIGNAL_DETECTED, {"iteration": n}))
    if done.status in ("error", "timeout"):
        events.append((EventType.ERROR, {"iteration": n, "message": error_text(done)}))
    if result.permission_denials:
        tools = ", ".join(sorted({d.tool_name for d in result.permission_denials}))
        message = (
            f"permission denied for {tools}: the agent could not use them in permission "
            f"mode {permission_mode!r}"
        )
        events.append((EventType.WARNING, {"iteration": n, "message": message}))
    return [(str(kind), data) for kind, data in events]


def output_events(
    n: int, result: IterationResult, transcript: TranscriptSummary | None
) -> list[Event]:
    """Warnings about the agent's output: lines too long to parse, an incomplete transcript."""
    events: list[Event] = []
    if result.oversized_lines:
        message = (
            f"{result.oversized_lines} output line(s) longer than "
            f"{_size(process.MAX_PARSED_LINE_BYTES)} were not parsed (the transcript keeps "
            "them whole)"
        )
        events.append((str(EventType.WARNING), {"iteration": n, "message": message}))
    problem = transcript.problem() if transcript is not None else None
    if problem is not None:
        events.append((str(EventType.WARNING), {"iteration": n, "message": problem}))
    return events


def _size(n: int) -> str:
    mib = 1024 * 1024
    return f"{n // mib} MiB" if n % mib == 0 else f"{n:,} bytes"


def error_type(result: IterationResult) -> str:
    if result.timed_out:
        return "timeout"
    if result.api_error_status:
        return f"api_error_{result.api_error_status}"
    if result.exit_code not in (0, None):
        return "agent_exit"
    return "agent_error"


def error_text(done: IterationRecord) -> str:
    return done.error_message or "the agent run failed"


def error_context(result: IterationResult, retry: int) -> dict[str, Any]:
    return {
        "exit_code": result.exit_code,
        "api_error_status": result.api_error_status,
        "stderr_tail": result.stderr_tail[-4000:],
        "output_tail": result.final_text[-2000:],
        "unparsed_lines": result.unparsed_lines,
        "oversized_lines": result.oversized_lines,
        "timed_out": result.timed_out,
        "retry": retry,
    }


def signals_json(signals: Signals) -> dict[str, Any]:
    data: dict[str, Any] = {
        "asked_question": signals.asked_question,
        "test_only": signals.test_only,
        "output_collapsed": signals.output_collapsed,
        "permission_denied": list(signals.permission_denied),
        "error_class": signals.error_class and str(signals.error_class),
    }
    if signals.question:
        data["question"] = signals.question
    return data


def summary(result: IterationResult) -> str:
    text = " ".join(result.final_text.split()) or (result.error_message or "")
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"
