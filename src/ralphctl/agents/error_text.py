"""What an agent's error message says, for CLIs that report errors only in words.

Amp and Cursor print no HTTP status: an error is a sentence (Amp's ``result.error``, Cursor's
stderr). ``error_kind`` reads the sentence into the status and error category the analyzer
and the usage-limit parking understand (``domain/analyzer.classify_error``,
``domain/usage_limits``), in Claude Code's vocabulary:

- ``authentication_failed`` (401): a missing, invalid or expired key or login;
- ``billing_error`` (402): out of credits, a payment needed — a person must act;
- ``rate_limit`` (429): a rate limit or a usage quota — the loop parks until it resets;
- ``overloaded`` (529): the model provider is overloaded — retried by the loop;
- ``invalid_request`` (400): the request itself was refused (the context is full).

The first rule that matches wins, in that order; a sentence matching none gives None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ErrorKind:
    """An error message read as an HTTP status and an error category."""

    status: int
    category: str


_RULES: tuple[tuple[re.Pattern[str], ErrorKind], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), kind)
    for pattern, kind in (
        (
            r"\bunauthori[sz]ed\b|\b401\b|invalid or missing api key|invalid api key"
            r"|\bnot (?:logged in|authenticated)\b|authentication (?:required|failed)"
            r"|\blogin required\b|\bauth-required\b",
            ErrorKind(401, "authentication_failed"),
        ),
        (
            r"\bout of credits\b|insufficient[ -]credits|credit balance is low"
            r"|in available credits|\bpayment required\b|\b402\b",
            ErrorKind(402, "billing_error"),
        ),
        (
            r"\brate[ _-]?limit|\btoo many requests\b|\b429\b|usage (?:quota|limit)"
            r"|free usage limit|\bresource[ _]exhausted\b",
            ErrorKind(429, "rate_limit"),
        ),
        (
            r"\boverload|\b529\b|\b503\b|service unavailable",
            ErrorKind(529, "overloaded"),
        ),
        (
            r"context (?:limit|window)|prompt is too long|maximum context length"
            r"|token limit exceeded",
            ErrorKind(400, "invalid_request"),
        ),
    )
)


def error_kind(message: str) -> ErrorKind | None:
    """The status and category ``message`` states, or None when it states none we know."""
    text = message[:2000]
    return next((kind for pattern, kind in _RULES if pattern.search(text)), None)
