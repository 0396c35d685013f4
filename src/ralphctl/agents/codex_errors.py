"""What Codex's error sentences mean (CLI 0.169.0, docs/agents/codex.md).

Codex prints API errors as text, not statuses: ``unexpected status 401 Unauthorized: …``,
``exceeded retry limit, last status: 429 Too Many Requests``, a 400's JSON body, ``We’re
currently experiencing high demand…`` (a 500), ``You’ve hit your usage limit. Try again at
7:19 PM.``, ``Quota exceeded. Check your plan and billing details.``. ``classify`` maps them to
an HTTP status and the error category ``domain/analyzer`` knows; ``stated_reset`` reads a
usage limit's reset time. A write the sandbox refused is only logged on stderr
(``… tools::router: error=patch rejected: …``): ``sandbox_denials`` reads those lines.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Any

import orjson

from ralphctl.domain.model import PermissionDenial

SHELL_TOOL = "exec_command"
PATCH_TOOL = "apply_patch"
#: The category of a usage limit (the parser reports it as a rejected rate limit).
USAGE_LIMIT = "usage_limit"
_DETAIL_CHARS = 200

_STATUS = re.compile(r"\b(?:unexpected status|last status:?) ([1-5]\d\d)\b", re.IGNORECASE)
_USAGE_LIMIT = re.compile(r"\bhit your usage limit\b", re.IGNORECASE)
_QUOTA = re.compile(r"\bquota exceeded\b", re.IGNORECASE)
_HIGH_DEMAND = re.compile(r"\bexperiencing high demand\b", re.IGNORECASE)
_TRY_AGAIN_AT = re.compile(
    r"try again at (?:(?P<month>[A-Za-z]{3})[a-z]* (?P<day>\d{1,2})(?:st|nd|rd|th)?,? "
    r"(?P<year>\d{4}),? )?(?P<hour>\d{1,2}):(?P<minute>\d{2}) ?(?P<half>[ap])\.?m\b",
    re.IGNORECASE,
)
_TRY_AGAIN_IN = re.compile(
    r"try again in ((?:\d+ (?:days?|hours?|minutes?|seconds?)[ ,]*(?:and )?)+)", re.IGNORECASE
)
_DURATION_PART = re.compile(r"(\d+) (day|hour|minute|second)", re.IGNORECASE)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_ROUTER_REJECTION = re.compile(
    r"tools::router: error=(?P<message>.*(?:rejected|blocked by).*)$", re.MULTILINE
)
_ROUTER = "tools::router"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_OVERLOADED_STATUSES = frozenset({503, 529})


@lru_cache(maxsize=64)
def classify(message: str | None) -> tuple[int | None, str | None]:
    """The HTTP status and error category a Codex error sentence stands for."""
    if not message:
        return None, None
    if _USAGE_LIMIT.search(message):
        return 429, USAGE_LIMIT
    if _QUOTA.search(message):
        return None, "billing_error"
    if _HIGH_DEMAND.search(message):
        return None, "overloaded"
    if match := _STATUS.search(message):
        status = int(match.group(1))
        return status, "overloaded" if status in _OVERLOADED_STATUSES else None
    body = _json_error(message)
    if body is not None:
        return 400, (
            body["type"] if isinstance(body.get("type"), str) else None
        ) or "invalid_request_error"
    return None, None


def _json_error(message: str) -> dict[str, Any] | None:
    """The ``error`` object of a message that is an API error body (how a 400 is printed)."""
    if not message.lstrip().startswith("{"):
        return None
    try:
        body = orjson.loads(message)
    except orjson.JSONDecodeError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else None


def stated_reset(message: str, now: datetime) -> float | None:
    """The reset time a usage-limit message states (``Try again at 7:19 PM.``, ``… at Sep
    29th, 2026 12:55 AM.``, ``… in 2 hours 5 minutes``), as epoch seconds, in ``now``'s zone
    (Codex prints local time)."""
    if at := _TRY_AGAIN_AT.search(message):
        return _clock_time(at, now)
    if within := _TRY_AGAIN_IN.search(message):
        seconds = {"day": 86400, "hour": 3600, "minute": 60, "second": 1}
        total = sum(
            int(amount) * seconds[unit.lower()]
            for amount, unit in _DURATION_PART.findall(within.group(1))
        )
        try:
            return (now + timedelta(seconds=total)).timestamp()
        except OverflowError:
            return None
    return None


def _clock_time(match: re.Match[str], now: datetime) -> float | None:
    hour = int(match["hour"])
    if not 1 <= hour <= 12 or int(match["minute"]) > 59:
        return None
    hour = hour % 12 + (12 if match["half"].lower() == "p" else 0)
    zone: tzinfo | None = now.tzinfo
    try:
        if match["month"] is not None:
            month = _MONTHS.index(match["month"].lower()) + 1
            day = datetime(int(match["year"]), month, int(match["day"]), tzinfo=zone)
        else:
            day = now
        moment = day.replace(hour=hour, minute=int(match["minute"]), second=0, microsecond=0)
    except ValueError:
        return None
    if match["month"] is None and moment <= now:
        moment += timedelta(days=1)
    return moment.timestamp()


def sandbox_denials(stderr: str) -> list[PermissionDenial]:
    """Writes the sandbox refused, as Codex logs them on stderr (no item is printed)."""
    if _ROUTER not in stderr:
        return []
    denials: list[PermissionDenial] = []
    for match in _ROUTER_REJECTION.finditer(_ANSI.sub("", stderr)):
        message = match["message"].strip()
        tool = PATCH_TOOL if message.startswith("patch") else SHELL_TOOL
        denials.append(PermissionDenial(tool, "", " ".join(message.split())[:_DETAIL_CHARS]))
    return denials
