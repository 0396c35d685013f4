"""One validation of numbers and durations: finite, bounded, the same words everywhere."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ralphctl.domain import numbers

#: Every float hypothesis can make: NaN, both infinities, -0.0, subnormals, huge values.
ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
SPECIAL = [math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308, -1e-310]


def accepted(check: Callable[[object], float], value: object) -> float | None:
    """What ``check`` makes of ``value``, or None if it refuses it (with a "must be" reason)."""
    try:
        return check(value)
    except ValueError as exc:
        refusals.append(str(exc))
        return None


refusals: list[str] = []


@given(ANY_FLOAT)
def test_a_cost_is_accepted_exactly_when_it_is_finite_positive_and_at_most_the_cap(value):
    sane = math.isfinite(value) and 0 < value <= numbers.MAX_USD
    result = accepted(numbers.cost, value)
    assert (result is not None) == sane
    assert result is None or result == value


@given(ANY_FLOAT)
def test_a_duration_is_accepted_exactly_when_it_is_finite_and_within_a_year(value):
    sane = math.isfinite(value) and 0 < value <= numbers.MAX_SECONDS
    result = accepted(partial(numbers.duration, allow_zero=False), value)
    assert (result is not None) == sane
    assert result is None or result == value


@given(ANY_FLOAT)
def test_a_duration_given_as_text_means_the_same_as_the_number(value):
    try:
        from_number = numbers.duration(value, allow_zero=True)
    except ValueError:
        from_number = None
    try:
        from_text = numbers.duration(repr(value), allow_zero=True)
    except ValueError:
        from_text = None
    if from_text is not None:  # "1e-05" is not duration text, but what text says is exact
        assert from_number == from_text
    assert from_text is None or math.isfinite(from_text)


@pytest.mark.parametrize("value", SPECIAL)
def test_nothing_that_is_not_finite_is_ever_accepted_and_minus_zero_is_zero(value):
    refusals.clear()
    for check in (
        partial(numbers.cost, allow_zero=True),
        partial(numbers.duration, allow_zero=True),
        numbers.temperature,
    ):
        result = accepted(check, value)
        if result is not None:
            assert math.isfinite(result)
            assert math.copysign(1.0, result) == 1.0  # never -0.0
    assert all("must be" in reason for reason in refusals)


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "infinity", "1e999", "1" + "0" * 400])
def test_text_that_means_no_number_is_not_a_duration(text):
    with pytest.raises(ValueError, match="duration"):
        numbers.duration(text, allow_zero=True)


def test_a_duration_of_huge_units_is_refused_not_turned_into_infinity():
    with pytest.raises(ValueError, match="not a finite duration"):
        numbers.parse_duration("9" * 400 + "d")


@pytest.mark.parametrize("value", [True, 3.0, "3", None, 2**53 + 1, -1, 10**400])
def test_a_count_must_be_a_whole_number_in_range(value):
    with pytest.raises(ValueError, match="must be"):
        numbers.whole(value, minimum=0)


def test_an_error_about_an_enormous_number_stays_readable():
    with pytest.raises(ValueError, match="must be <=") as caught:
        numbers.whole(10**5000, minimum=1)
    assert len(str(caught.value)) < 80


@given(st.integers())
def test_a_count_is_accepted_exactly_when_it_is_in_range(value):
    sane = 1 <= value <= numbers.MAX_WHOLE
    result = accepted(partial(numbers.whole, minimum=1), value)
    assert (result is not None) == sane
    assert result is None or result == value


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("1.5", 1.5), ("45s", 45), ("1h30m", 5400), ("250ms", 0.25), ("2d", 172800)],
)
def test_durations_accept_seconds_and_units(text, seconds):
    assert numbers.duration(text, allow_zero=False) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "4 hours", "1h-5m", "h", "1e5", "+5", "٣s", "."])
def test_text_that_is_not_a_duration_says_what_a_duration_is(text):
    with pytest.raises(ValueError, match=r"is not a duration: use seconds or e\.g\. 90s"):
        numbers.parse_duration(text)
