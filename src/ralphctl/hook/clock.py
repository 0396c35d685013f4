"""Timestamps as trackers spell them: ISO 8601 UTC, to the second, with a ``Z``."""

from __future__ import annotations

import time


def iso(moment: float) -> str:
    """``2026-11-21T22:16:46Z`` for a Unix time."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


def epoch(text: str) -> float:
    """The Unix time of an ISO 8601 timestamp (naive means UTC); ValueError if it is not one."""
    own = _own_spelling(text)
    if own is not None:
        return own
    from datetime import UTC, datetime

    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _own_spelling(text: str) -> float | None:
    """``iso``'s spelling, parsed by hand: ``datetime`` costs an import on the hot path."""
    digits = text[0:4] + text[5:7] + text[8:10] + text[11:13] + text[14:16] + text[17:19]
    if len(text) != 20 or not (digits.isascii() and digits.isdigit()):
        return None
    year, month, day = int(text[0:4]), int(text[5:7]), int(text[8:10])
    seconds = int(text[11:13]) * 3600 + int(text[14:16]) * 60 + int(text[17:19])
    moment = float(_days_from_civil(year, month, day) * 86400 + seconds)
    try:
        return moment if iso(moment) == text else None  # rejects 02-31, 25:00, bad separators
    except (OverflowError, OSError, ValueError):
        return None


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468
