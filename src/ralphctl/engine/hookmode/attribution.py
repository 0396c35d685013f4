"""Settle a session's iterations against its ``result`` line, the exact totals.

During the session each iteration is recorded with the live estimate of its messages
(``usage``). When a ``claude`` process ends, its ``result`` gives the exact tokens and cost,
helper requests included. Each quantity is then spread over the iterations that process ran,
in proportion to their estimates of it (all of it to the last one when they estimated none),
so the loop's totals are exactly what Claude Code reported and each iteration keeps its share.

A process's own totals: ``model_usage_since_last_result`` (per model, with ``costUSD``) when
the CLI sends it. Otherwise ``modelUsage`` and ``total_cost_usd``, which for a ``--resume``d
session count the whole session so far (2.1.330): the previous process's totals are then
subtracted, unless the new ones are smaller (a CLI that counts per process).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ralphctl.domain.costs import Cost, CostSource, Price, iteration_cost
from ralphctl.domain.model import IterationResult, TokenUsage
from ralphctl.engine.hookmode.usage import Usage
from ralphctl.store.records import IterationRecord


class SessionTotals:
    """The totals of each ``claude`` process of one session, from their ``result`` lines."""

    def __init__(
        self, prices: Mapping[str, Price], tokens: TokenUsage | None = None, usd: float = 0.0
    ) -> None:
        self._prices = prices
        self._tokens = tokens or TokenUsage()  # the session's reported totals so far
        self._usd = usd

    def of_run(
        self, result: IterationResult, own: Usage | None, *, resumed: bool
    ) -> tuple[TokenUsage, Cost] | None:
        """The process's own tokens and cost; None without a result line (killed)."""
        if result.truncated:
            return None
        cost = iteration_cost(result, self._prices)
        before_tokens, before_usd = self._tokens, self._usd
        self._tokens, self._usd = result.tokens, cost.usd or 0.0
        if own is not None:
            return own.tokens, Cost(own.cost_usd, CostSource.REPORTED)
        if not resumed or cost.usd is None or not _covers(result.tokens, before_tokens):
            return result.tokens, cost
        if cost.usd < before_usd:
            return result.tokens, cost
        return _minus(result.tokens, before_tokens), Cost(cost.usd - before_usd, cost.source)


def _covers(total: TokenUsage, part: TokenUsage) -> bool:
    return all(
        getattr(total, name) >= getattr(part, name)
        for name in ("input", "output", "cache_read", "cache_write")
    )


def _minus(total: TokenUsage, part: TokenUsage) -> TokenUsage:
    return TokenUsage(
        total.input - part.input,
        total.output - part.output,
        total.cache_read - part.cache_read,
        total.cache_write - part.cache_write,
    )


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
    shares, left = [], total
    for weight in weights[:-1]:
        # the fraction first: ``total * weight`` can round a subnormal weight up past ``whole``
        share = min(left, total * (weight / whole))
        shares.append(share)
        left -= share
    return [*shares, max(0.0, left)]


def spread_int(total: int, weights: Sequence[int]) -> list[int]:
    """Whole shares of ``total`` proportional to ``weights``; the last takes the remainder."""
    if not weights:
        return []
    whole = sum(weights)
    if whole <= 0:
        return [0] * (len(weights) - 1) + [total]
    shares = [total * weight // whole for weight in weights[:-1]]
    return [*shares, total - sum(shares)]
