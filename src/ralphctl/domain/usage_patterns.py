"""Tokens and cost read from a plain-text agent's output by the user's regular expressions.

A tokens pattern names what it captures with the groups ``input``, ``output``, ``cache_read``
and ``cache_write`` (at least ``input`` or ``output``), and may capture the ``model``; a cost
pattern has a ``cost`` group (US dollars). Numbers may be written as the agents print them:
``1234``, ``1,234``, ``2.3k``, ``1.2M``, ``$0.05``.

Each pattern is searched once per output line, and every matching line counts: the amounts of
all of them are added up. So a pattern should match the lines that report one call each, or a
total printed once at the end, not a running total printed after every step.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

TOKEN_GROUPS = ("input", "output", "cache_read", "cache_write")
COST_GROUP = "cost"
MODEL_GROUP = "model"
_SUFFIXES = {"k": 1_000.0, "m": 1_000_000.0}
_AMOUNT = re.compile(r"\$?\s*([0-9][0-9,_]*(?:\.[0-9]+)?|\.[0-9]+)\s*([kKmM]?)")


@dataclass(frozen=True, slots=True)
class LineUsage:
    """What one output line reports: tokens by kind, a cost in USD, a model name."""

    tokens: dict[str, int]
    cost_usd: float | None = None
    model: str | None = None


def tokens_pattern(text: str) -> re.Pattern[str]:
    """The compiled tokens pattern; ValueError saying what is wrong with it."""
    pattern = _compiled(text)
    groups = set(pattern.groupindex)
    if not groups & {"input", "output"}:
        raise ValueError(
            "needs a named group (?P<input>…) or (?P<output>…) for the token counts, "
            "e.g. 'Tokens: (?P<input>[0-9,.]+k?) sent, (?P<output>[0-9,.]+k?) received'"
        )
    if unknown := sorted(groups - {*TOKEN_GROUPS, MODEL_GROUP}):
        known = ", ".join([*TOKEN_GROUPS, MODEL_GROUP])
        raise ValueError(f"unknown group(s) {', '.join(unknown)}; known: {known}")
    return pattern


def cost_pattern(text: str) -> re.Pattern[str]:
    """The compiled cost pattern; ValueError saying what is wrong with it."""
    pattern = _compiled(text)
    if COST_GROUP not in pattern.groupindex:
        raise ValueError(
            "needs a named group (?P<cost>…) for the amount in USD, "
            "e.g. 'Cost: \\$(?P<cost>[0-9.]+)'"
        )
    if unknown := sorted(set(pattern.groupindex) - {COST_GROUP}):
        raise ValueError(f"unknown group(s) {', '.join(unknown)}; known: {COST_GROUP}")
    return pattern


def line_usage(
    line: str, tokens: re.Pattern[str] | None, cost: re.Pattern[str] | None
) -> LineUsage | None:
    """What ``line`` reports by the patterns, or None when neither matches it. A group that
    did not take part in the match, or whose text is not a number, counts nothing."""
    found_tokens = tokens.search(line) if tokens is not None else None
    found_cost = cost.search(line) if cost is not None else None
    if found_tokens is None and found_cost is None:
        return None
    counts: dict[str, int] = {}
    model = None
    if found_tokens is not None:
        captured = found_tokens.groupdict()
        for name in TOKEN_GROUPS:
            value = amount(captured.get(name))
            if value is not None:
                counts[name] = round(value)
        model = (captured.get(MODEL_GROUP) or "").strip() or None
    usd = amount(found_cost.group(COST_GROUP)) if found_cost is not None else None
    return LineUsage(counts, usd, model)


def amount(text: str | None) -> float | None:
    """``text`` as a number (``1,234``, ``2.3k``, ``1.2M``, ``$0.05``), else None."""
    if not text:
        return None
    found = _AMOUNT.fullmatch(text.strip())
    if found is None:
        return None
    number = float(found.group(1).replace(",", "").replace("_", ""))
    number *= _SUFFIXES.get(found.group(2).lower(), 1.0)
    return number if math.isfinite(number) else None


def _compiled(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
