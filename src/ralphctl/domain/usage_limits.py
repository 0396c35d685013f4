"""Usage limits: did the provider refuse the run until some reset time?

Structured signals first, strongest first:

1. a rate-limit event with status ``rejected`` (its ``resetsAt`` is the reset time);
2. the agent's assistant error ``rate_limit`` on a failed run;
3. a failed run with HTTP status 429, stated as a field or, by CLIs that report no status
   (Claude Code 2.1.100: ``API Error: 429 {"type":"error","error":{"type":"rate_limit_error"…``),
   in the final text where a limit message may stand (see below).

Then text fallbacks, for CLIs that only print the message: ``Claude AI usage limit
reached|<epoch>``, ``You've hit your [session|weekly|…] limit · resets 3:50pm (Asia/Tokyo)``,
``You're out of extra usage · resets 9pm``, ``Claude usage limit reached. Your limit will reset
at 9am (America/Chicago)``. They are read from ``final_text`` only, which the caller guarantees
holds the agent's final assistant or result text and never tool output (file contents that
mention a limit must not park a loop). Within it, only the last non-empty line counts, or any
line of a final text of at most three lines (the CLI's limit message is the whole answer).

A structured signal without a reset time takes the time from the text when it states one;
otherwise the reset is ``now + default_wait_s`` and ``reset_known`` is False. A stated clock
time is its next occurrence after ``now`` in the stated time zone (``local_zone`` when none is
given). ``allowed_warning`` (close to a limit) is not a limit: ``usage_warning`` reports it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta, tzinfo
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ralphctl.domain.model import IterationResult, RateLimitInfo

DEFAULT_WAIT_S = 300.0
_SHORT_TEXT_LINES = 3
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")

_EPOCH = re.compile(r"usage limit reached\|(\d{9,11})\b", re.IGNORECASE)
_PHRASE = re.compile(
    r"\bhit your (?:[\w-]+ ){0,3}limit\b"
    r"|\b(?:usage|\d+-hour|session|weekly|daily) limit reached\b"
    r"|\bout of extra usage\b",
    re.IGNORECASE,
)
_API_429 = re.compile(
    r"^API Error:? (?:.*\(429\)|429\b|Rate limit reached\b)|\brate_limit_error\b", re.IGNORECASE
)
_RESET = re.compile(
    r"\breset(?:s)?(?: at)? "
    r"(?:(?P<month>[A-Za-z]{3})[a-z]* (?P<day>\d{1,2})(?:,| at)? )?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))? ?(?P<half>[ap]\.?m\b\.?)?"
    r"(?: ?\((?P<zone>[^()\s]+)\))?",
    re.IGNORECASE,
)


class LimitSource(StrEnum):
    RATE_LIMIT_EVENT = "rate_limit_event"
    ASSISTANT_ERROR = "assistant_error"
    HTTP_429 = "http_429"
    TEXT = "text"


@dataclass(frozen=True, slots=True)
class UsageLimit:
    """The run hit a usage limit: wait until ``resets_at`` (epoch seconds) before the next one.

    ``reset_known`` is False when no signal stated a (future) reset time and ``resets_at`` is
    ``now + default_wait_s``; ``raw`` is the message or the structured signal, for the record.
    """

    resets_at: float
    reset_known: bool
    source: LimitSource
    raw: str
    limit_type: str | None = None

    def wait_s(self, now: float) -> float:
        return max(0.0, self.resets_at - now)


def detect_usage_limit(
    result: IterationResult,
    now: float,
    *,
    default_wait_s: float = DEFAULT_WAIT_S,
    local_zone: tzinfo = UTC,
) -> UsageLimit | None:
    """The usage limit that ended this run, or None (see the module docstring for the rules)."""
    line = _limit_line(result.final_text)
    stated = None if line is None else _stated_reset(line, now, local_zone)
    info = result.rate_limit
    if info is not None and info.status == "rejected" and (result.is_error or line is not None):
        reset = info.resets_at if info.resets_at is not None and info.resets_at > now else stated
        raw = line or f"rate limit rejected ({info.limit_type or 'unknown window'})"
        return _limit(
            LimitSource.RATE_LIMIT_EVENT, reset, raw, info.limit_type, now, default_wait_s
        )
    if result.is_error and result.assistant_error == "rate_limit":
        raw = line or result.final_text.strip() or "assistant error: rate_limit"
        return _limit(LimitSource.ASSISTANT_ERROR, stated, raw, None, now, default_wait_s)
    if result.is_error and result.api_error_status == 429:
        raw = line or result.final_text.strip() or "HTTP status 429"
        return _limit(LimitSource.HTTP_429, stated, raw, None, now, default_wait_s)
    if result.is_error and (reported := _api_429_line(result.final_text)) is not None:
        raw = line or reported
        return _limit(LimitSource.HTTP_429, stated, raw, None, now, default_wait_s)
    if line is not None:
        return _limit(LimitSource.TEXT, stated, line, None, now, default_wait_s)
    return None


def usage_warning(result: IterationResult) -> RateLimitInfo | None:
    """The agent's "close to a limit" signal (``allowed_warning``): worth a log line, no wait."""
    info = result.rate_limit
    return info if info is not None and info.status == "allowed_warning" else None


def _limit(
    source: LimitSource,
    reset: float | None,
    raw: str,
    limit_type: str | None,
    now: float,
    default_wait_s: float,
) -> UsageLimit:
    if reset is None:
        return UsageLimit(now + default_wait_s, False, source, raw, limit_type)
    return UsageLimit(reset, True, source, raw, limit_type)


def _limit_line(text: str) -> str | None:
    """The line of ``text`` that announces a usage limit, where such a message may stand."""
    for line in _message_lines(text):
        if _EPOCH.search(line) or _PHRASE.search(line):
            return line
    return None


def _api_429_line(text: str) -> str | None:
    """The line of ``text`` reporting an HTTP 429 answer, where the CLI's message stands."""
    return next((line for line in _message_lines(text) if _API_429.search(line)), None)


def _message_lines(text: str) -> list[str]:
    """Where a CLI's limit or error message may stand in a final text, last line first."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    candidates = lines if len(lines) <= _SHORT_TEXT_LINES else lines[-1:]
    return candidates[::-1]


def _stated_reset(line: str, now: float, local_zone: tzinfo) -> float | None:
    """The future reset time a limit message states, as epoch seconds, or None."""
    if epoch := _EPOCH.search(line):
        stamp = float(epoch.group(1))
        return stamp if stamp > now else None
    clock = _RESET.search(line)
    if clock is None:
        return None
    try:
        return _next_occurrence(clock, now, local_zone)
    except (ValueError, OverflowError, OSError):
        return None


def _next_occurrence(clock: re.Match[str], now: float, local_zone: tzinfo) -> float | None:
    """The first moment after ``now`` that matches the stated clock time (and date)."""
    hour = int(clock["hour"])
    minute = int(clock["minute"] or 0)
    half = (clock["half"] or "").lower()[:1]
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half == "p" else 0)
    elif clock["minute"] is None:
        return None  # a bare number ("resets 5") is no clock time
    zone = _zone(clock["zone"], local_zone)
    today = datetime.fromtimestamp(now, zone)
    at = time(hour, minute)
    if clock["month"] is None:
        candidate = datetime.combine(today.date(), at, zone)
        if candidate.timestamp() <= now:
            candidate = datetime.combine(today.date() + timedelta(days=1), at, zone)
        return candidate.timestamp()
    month = clock["month"].lower()
    if month not in _MONTHS:
        return None
    day = int(clock["day"])
    for year in (today.year, today.year + 1):
        candidate = datetime(year, _MONTHS.index(month) + 1, day, hour, minute, tzinfo=zone)
        if candidate.timestamp() > now:
            return candidate.timestamp()
    return None


def _zone(name: str | None, local_zone: tzinfo) -> tzinfo:
    if name is None:
        return local_zone
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return local_zone
