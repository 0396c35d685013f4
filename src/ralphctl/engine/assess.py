"""What one agent run amounts to: completion (after the gates), usage limit, analysis, cost,
progress and the circuit breaker. Pure: the runner gathers the facts, this judges them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ralphctl.domain.analyzer import (
    Signals,
    analyse,
    breaker_outcome,
    edited_files,
    prompt_notes,
)
from ralphctl.domain.breaker import BreakerConfig, BreakerState, BreakerStatus, record
from ralphctl.domain.costs import Cost, Price, iteration_cost
from ralphctl.domain.markers import Detection, Marker, detect
from ralphctl.domain.model import IterationResult
from ralphctl.domain.usage_limits import UsageLimit, detect_usage_limit
from ralphctl.engine.gates import GateResult, gate_report

NO_DETECTION = Detection(completed=False, blocked_reason=None, evidence=None)


@dataclass(frozen=True, slots=True)
class Assessment:
    claimed: bool  # the agent declared completion
    completed: bool  # ... and every gate passed
    blocked_reason: str | None
    gate_results: tuple[GateResult, ...]
    usage_limit: UsageLimit | None
    signals: Signals
    cost: Cost
    progressed: bool
    breaker: BreakerState
    notes: tuple[str, ...]  # for the next prompt

    @property
    def tripped(self) -> bool:
        return self.breaker.status is BreakerStatus.OPEN


def completion_claim(result: IterationResult, marker: Marker, prompt: str) -> Detection:
    """The agent's declaration in its final text; an errored run declares nothing."""
    if result.is_error:
        return NO_DETECTION
    return detect(result.final_text, marker, prompt=prompt)


def assess(
    n: int,
    result: IterationResult,
    detection: Detection,
    *,
    gates: Sequence[GateResult],
    changed: bool | None,
    previous_lengths: Sequence[int],
    breaker: BreakerState,
    breaker_config: BreakerConfig,
    prices: Mapping[str, Price],
    usage_limit_wait: float,
    now: float,
) -> Assessment:
    """Judge one finished run. ``changed``: git saw files change during it (None: no git)."""
    limit = detect_usage_limit(result, now, default_wait_s=usage_limit_wait)
    signals = analyse(result, previous_lengths=previous_lengths)
    files_changed = edited_files(result) if changed is None else changed
    outcome = breaker_outcome(
        n, result, signals, files_changed=files_changed, usage_limited=limit is not None
    )
    failed_gate = gate_report(gates)
    notes = prompt_notes(signals)
    if failed_gate:
        notes.append(failed_gate)
    return Assessment(
        claimed=detection.completed,
        completed=detection.completed and failed_gate is None,
        blocked_reason=detection.blocked_reason,
        gate_results=tuple(gates),
        usage_limit=limit,
        signals=signals,
        cost=iteration_cost(result, prices),
        progressed=outcome.progressed,
        breaker=record(breaker, outcome, breaker_config, now),
        notes=tuple(notes),
    )
