"""Error recovery: how long to wait before retrying after failed iterations."""

from __future__ import annotations

DEFAULT_BASE_S = 1.0
DEFAULT_CAP_S = 300.0
#: Past this many doublings every delay is the cap anyway (and 2**n stays a small float).
_MAX_DOUBLINGS = 64


def backoff_delay(
    retry_count: int, *, base: float = DEFAULT_BASE_S, cap: float = DEFAULT_CAP_S
) -> float:
    """Seconds to wait before retry number ``retry_count``: ``base * 2**retry_count``, capped.

    ``retry_count`` is the number of consecutive failed iterations so far, so with the defaults
    the waits after 1, 2, 3… failures are 2 s, 4 s, 8 s… up to 300 s; 0 failures wait ``base``.
    """
    if retry_count < 0:
        raise ValueError(f"retry_count cannot be negative: {retry_count}")
    if base < 0 or cap < 0:
        raise ValueError(f"base and cap cannot be negative: base={base}, cap={cap}")
    return min(cap, base * 2.0 ** min(retry_count, _MAX_DOUBLINGS))
