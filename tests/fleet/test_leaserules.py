"""The lease rules alone, on a fixed clock: who may acquire, renew and write, and when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ralphctl.fleet.leaserules import Lease, acquired, holds, is_free, released, renewed

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
TTL = timedelta(seconds=30)


def held(worker: str = "build-01", generation: int = 1, expires_in: float = 10) -> Lease:
    return Lease("loop-a", worker, generation, NOW, NOW + timedelta(seconds=expires_in))


def test_a_loop_never_held_released_or_expired_is_free() -> None:
    assert is_free(None, NOW)
    assert is_free(Lease("loop-a", None, 3), NOW)
    assert is_free(held(expires_in=0), NOW)  # expiry is exclusive of its instant
    assert not is_free(held(expires_in=0.001), NOW)


def test_each_acquisition_is_the_next_generation_for_its_time_to_live() -> None:
    first = acquired(None, "loop-a", "build-01", NOW, TTL)
    after_release = acquired(Lease("loop-a", None, 4), "loop-a", "build-02", NOW, TTL)

    assert first == Lease("loop-a", "build-01", 1, NOW, NOW + TTL)
    assert after_release is not None
    assert after_release.generation == 5


def test_a_lease_held_and_not_expired_cannot_be_acquired_even_by_its_holder() -> None:
    assert acquired(held(), "loop-a", "build-02", NOW, TTL) is None
    assert acquired(held(), "loop-a", "build-01", NOW, TTL) is None


def test_renewing_needs_the_holder_s_name_and_generation_not_an_unexpired_lease() -> None:
    expired = held(expires_in=-60)

    assert renewed(expired, "build-01", 1, NOW, TTL) == Lease(
        "loop-a", "build-01", 1, NOW, NOW + TTL
    )
    assert renewed(held(), "build-02", 1, NOW, TTL) is None
    assert renewed(held(generation=2), "build-01", 1, NOW, TTL) is None
    assert renewed(Lease("loop-a", None, 1), "build-01", 1, NOW, TTL) is None


def test_only_the_holder_releases_and_the_generation_stays_for_the_next() -> None:
    freed = released(held(generation=3), "build-01", 3)

    assert freed == Lease("loop-a", None, 3, NOW, None)
    assert is_free(freed, NOW)
    assert released(held(generation=3), "build-02", 3) is None
    assert released(held(generation=3), "build-01", 2) is None
    assert released(freed, "build-01", 3) is None


def test_only_the_current_unreleased_generation_may_write() -> None:
    assert holds(held(generation=2), 2)
    assert not holds(held(generation=2), 1)
    assert not holds(Lease("loop-a", None, 2), 2)
    assert not holds(None, 1)


def test_a_time_to_live_must_be_positive() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        acquired(None, "loop-a", "build-01", NOW, timedelta(0))
