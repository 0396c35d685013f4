"""Error recovery: the wait before retrying after failed iterations."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ralphctl.domain.backoff import backoff_delay


@pytest.mark.parametrize(
    ("failures", "delay"),
    [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (8, 256.0), (9, 300.0), (10_000, 300.0)],
)
def test_the_wait_doubles_with_each_failure_up_to_five_minutes(failures, delay):
    assert backoff_delay(failures) == delay


@pytest.mark.parametrize(
    ("failures", "base", "cap", "delay"),
    [(3, 0.5, 300.0, 4.0), (3, 1.0, 5.0, 5.0), (2, 0.0, 300.0, 0.0), (4, 10.0, 3600.0, 160.0)],
)
def test_base_and_cap_are_configurable(failures, base, cap, delay):
    assert backoff_delay(failures, base=base, cap=cap) == delay


@pytest.mark.parametrize(
    "kwargs", [{"retry_count": -1}, {"retry_count": 1, "base": -1}, {"retry_count": 1, "cap": -1}]
)
def test_negative_inputs_are_refused(kwargs):
    with pytest.raises(ValueError, match="negative"):
        backoff_delay(**kwargs)


@given(st.integers(0, 10**9), st.integers(0, 10**9))
def test_the_wait_never_shrinks_and_never_exceeds_the_cap(a, b):
    low, high = sorted((a, b))
    assert 0 <= backoff_delay(low) <= backoff_delay(high) <= 300.0
