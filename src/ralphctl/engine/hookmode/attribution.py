"""Settle a session's iterations against its ``result`` line, the exact totals.

During the session each iteration is recorded with the live estimate of its messages
(``usage``). When the ``claude`` process ends, its ``result`` gives the exact tokens (per
model, ``modelUsage``) and ``total_cost_usd``, helper requests included. Each quantity is then
spread over the iterations that process ran, in proportion to their estimates of it (all of
it to the last one when they estimated none), so the loop's totals are exactly what Claude
Code reported and each iteration keeps its share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ralphctl.domain.costs import Cost
from ralphctl.domain.model import TokenUsage
from ralphctl.store.records import IterationRecord


def settle(
    iterations: Sequence[IterationRecord], tokens: TokenUsage, cost: Cost
) -> list[IterationRecord]:
    """``iterations`` with ``tokens`` and ``cost`` spread over them (a cost of None: the
    estimated costs stay)."""
    inputs = spread_int(tokens.input, [it.tokens_input for it in iterations])
    outputs = spread_int(tokens.output, [it.tokens_output for it in iterations])
    reads = spread_int(tokens.cache_read, [it.tokens_cache_read for it in iterations])
    writes = spread_int(tokens.cache_write, [it.tokens_cache_write for it in iterations])
    costs: list[float | None] = [it.cost_usd for it in iterations]
    source = [it.cost_source for it in iterations]
    if cost.usd is not None:
        costs = list(spread(cost.usd, [it.cost_usd or 0.0 for it in iterations]))
        source = [str(cost.source)] * len(iterations)
    return [
        replace(
            it,
            tokens_input=inputs[i],
            tokens_output=outputs[i],
            tokens_cache_read=reads[i],
            tokens_cache_write=writes[i],
            cost_usd=costs[i],
            cost_source=source[i],
        )
        for i, it in enumerate(iterations)
    ]


def spread(total: float, weights: Sequence[float]) -> list[float]:
    """``total`` in shares proportional to ``weights``; the shares add up to ``total``."""
    if not weights:
        return []
    whole = sum(weights)
    if whole <= 0:
        return [0.0] * (len(weights) - 1) + [total]
    shares = [total * weight / whole for weight in weights[:-1]]
    return [*shares, max(0.0, total - sum(shares))]


def spread_int(total: int, weights: Sequence[int]) -> list[int]:
    """Whole shares of ``total`` proportional to ``weights``; the last takes the remainder."""
    if not weights:
        return []
    whole = sum(weights)
    if whole <= 0:
        return [0] * (len(weights) - 1) + [total]
    shares = [total * weight // whole for weight in weights[:-1]]
    return [*shares, total - sum(shares)]
