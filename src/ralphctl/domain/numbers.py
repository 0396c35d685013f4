"""The one validation of the numbers a user gives: budgets, durations, counts and prices.

Every way in (``ralphctl run`` flags, ``ralphctl.toml``, the API's request bodies, arming a
hook loop) checks its numbers here, so a value means the same thing, and is refused with the
same words, wherever it comes from. Not-a-number and the infinities are always refused: a
comparison with NaN is always false, so a NaN budget would never end a loop, and an infinite
one is "no budget" in disguise (leave the setting out for that). Booleans are not numbers
(TOML ``true`` is not 1). A whole number must be given as one: ``3.0`` iterations is refused.

Stdlib only and cheap to import: hook arming validates with it.
"""

from __future__ import annotations

import math

#: A cost budget or a price above this is a typo, not a plan (US dollars).
MAX_USD = 1_000_000.0
#: The longest duration accepted: one year, in seconds.
MAX_SECONDS = 366 * 86_400.0
#: The largest whole number accepted: the largest a JSON reader in a browser holds exactly.
MAX_WHOLE = 2**53
#: ``[loops.llm] temperature``: the widest range any agent accepts.
MAX_TEMPERATURE = 2.0

_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_HINT = "use seconds or e.g. 90s, 30m, 4h, 1h30m"


def real(value: object, *, what: str = "a number") -> float:
    """``value`` as a finite float; ValueError for text, booleans, NaN and the infinities."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be {what}, not {_shown(value)}")
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        raise ValueError(f"must be a finite number, not {_shown(value)}") from None
    if not math.isfinite(number):
        raise ValueError(f"must be a finite number, not {_plain(number)}")
    return number + 0.0  # -0.0 becomes 0.0


def bounded(value: object, *, low: float, high: float, low_open: bool, what: str) -> float:
    """A finite number in ``[low, high]`` (``(low, high]`` when ``low_open``)."""
    number = real(value, what=what)
    if number < low or (low_open and number == low) or number > high:
        opening = "(" if low_open else "["
        raise ValueError(
            f"must be {what} in {opening}{_bound(low)}, {_bound(high)}], not {_plain(number)}"
        )
    return number


def cost(value: object, *, allow_zero: bool = False) -> float:
    """A US dollar amount: finite, > 0 (>= 0 with ``allow_zero``), at most ``MAX_USD``."""
    return bounded(value, low=0.0, high=MAX_USD, low_open=not allow_zero, what="an amount in USD")


def temperature(value: object) -> float:
    """A sampling temperature in [0, ``MAX_TEMPERATURE``]."""
    return bounded(value, low=0.0, high=MAX_TEMPERATURE, low_open=False, what="a temperature")


def whole(value: object, *, minimum: int, maximum: int = MAX_WHOLE) -> int:
    """A whole number in ``[minimum, maximum]``; floats (even ``3.0``) and booleans refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be a whole number >= {minimum}, not {_shown(value)}")
    if value < minimum:
        raise ValueError(f"must be >= {minimum}, not {_shown(value)}")
    if value > maximum:
        raise ValueError(f"must be <= {maximum}, not {_shown(value)}")
    return value


def duration(value: object, *, allow_zero: bool) -> float:
    """Seconds from a number or a text such as ``90``, ``45s``, ``30m``, ``4h``, ``1h30m``:
    finite, > 0 (>= 0 with ``allow_zero``), at most ``MAX_SECONDS`` (a year)."""
    seconds = parse_duration(value)
    if seconds < 0 or (seconds == 0 and not allow_zero) or seconds > MAX_SECONDS:
        low = ">= 0" if allow_zero else "> 0"
        raise ValueError(
            f"must be a duration {low} and at most {MAX_SECONDS / 86_400:g} days, "
            f"not {_shown(value)}"
        )
    return seconds


def parse_duration(value: object) -> float:
    """Seconds from a number or a text such as ``90``, ``45s``, ``30m``, ``4h``, ``1h30m``
    (units ms, s, m, h, d); finite, any sign: bounds are ``duration``'s job."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{_shown(value)} is not a duration: {_DURATION_HINT}")
    if not isinstance(value, str):
        return real(value, what="a duration")
    text = value.strip().lower().replace(" ", "")
    seconds = _number(text)
    if seconds is None:
        seconds = _with_units(text)
    if seconds is None:
        raise ValueError(f"{_shown(value)} is not a duration: {_DURATION_HINT}")
    if not math.isfinite(seconds):
        raise ValueError(f"{_shown(value)} is not a finite duration: {_DURATION_HINT}")
    return seconds + 0.0


def _number(text: str) -> float | None:
    """A plain decimal number (digits, one optional point, an optional leading minus)."""
    digits = text.removeprefix("-")
    whole_part, _, fraction = digits.partition(".")
    if not (whole_part or fraction) or not (whole_part + fraction).isdecimal():
        return None
    if not whole_part.isascii() or not fraction.isascii():
        return None
    return float(text)


def _with_units(text: str) -> float | None:
    """``1h30m``-style text: numbers each followed by a unit, nothing else."""
    total, position = 0.0, 0
    while position < len(text):
        start = position
        while position < len(text) and (text[position].isdigit() or text[position] == "."):
            position += 1
        amount = text[start:position]
        unit_start = position
        while position < len(text) and text[position].isalpha():
            position += 1
        unit = text[unit_start:position]
        number = _number(amount) if amount and not amount.startswith("-") else None
        if number is None or unit not in _UNIT_SECONDS:
            return None
        total += number * _UNIT_SECONDS[unit]
    return total if text else None


def _bound(number: float) -> str:
    """A bound as people write it: ``0``, ``2``, ``1,000,000``."""
    return f"{number:,.0f}" if number.is_integer() else f"{number:g}"


def _plain(number: float) -> str:
    """A number as people write it: ``300``, ``0.5``, ``1e+06``, ``nan``, ``inf``."""
    return f"{number:g}"


def _shown(value: object, limit: int = 40) -> str:
    """``repr(value)``, shortened: error messages must stay readable whatever was given."""
    try:
        text = repr(value)
    except ValueError:  # an int with more digits than Python converts to text
        return "a number too large to show"
    return text if len(text) <= limit else text[: limit - 1] + "…"
