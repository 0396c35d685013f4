"""Leases on the real PostgreSQL: one holder at a time, takeover after expiry in a new
generation, and every earlier generation fenced out of renewing and writing."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta
from threading import Barrier

import pytest
from sqlalchemy import Engine, text

from ralphctl.fleet.errors import FleetError
from ralphctl.fleet.leaserules import Lease
from ralphctl.fleet.leases import acquire, current_lease, fenced, release, renew

pytestmark = pytest.mark.postgres

LONG = timedelta(minutes=5)
SHORT = timedelta(milliseconds=300)


def acquire_alone(engine: Engine, loop_id: str, worker: str, ttl: timedelta = LONG) -> Lease | None:
    with engine.begin() as conn:
        return acquire(conn, loop_id, worker, ttl)


def record_iteration(engine: Engine, lease: Lease) -> bool:
    """A record write as the worker will make it: refused (rolled back) when fenced."""
    with engine.begin() as conn:
        if fenced(conn, lease.loop_id, lease.generation):
            return False
        conn.execute(
            text("UPDATE loops SET iteration = iteration + 1 WHERE id = :id"),
            {"id": lease.loop_id},
        )
        return True


def iterations(engine: Engine, loop_id: str) -> int:
    with engine.connect() as conn:
        query = text("SELECT iteration FROM loops WHERE id = :id")
        count: int = conn.execute(query, {"id": loop_id}).scalar_one()
        return count


def still_waiting(future: Future[Lease | None], seconds: float = 0.3) -> bool:
    time.sleep(seconds)
    return not future.done()


def test_a_first_acquisition_holds_the_loop_in_generation_one(
    fleet_engine: Engine, make_loop: Callable[[str], str]
) -> None:
    loop_id = make_loop("loop-a")

    lease = acquire_alone(fleet_engine, loop_id, "build-01")

    assert lease is not None
    assert (lease.worker, lease.generation) == ("build-01", 1)
    assert lease.expires_at is not None
    assert lease.acquired_at is not None
    assert lease.expires_at - lease.acquired_at == LONG
    with fleet_engine.connect() as conn:
        assert current_lease(conn, loop_id) == lease


def test_of_two_workers_acquiring_at_once_the_second_waits_and_loses(
    fleet_engine: Engine, make_loop: Callable[[str], str]
) -> None:
    loop_id = make_loop("loop-a")

    with ThreadPoolExecutor(1) as pool:
        with fleet_engine.begin() as first:
            won = acquire(first, loop_id, "build-01", LONG)
            second = pool.submit(acquire_alone, fleet_engine, loop_id, "build-02")
            assert still_waiting(second)  # on the first's lock on the lease
        lost = second.result(timeout=10)

    assert won is not None
    assert won.worker == "build-01"
    assert lost is None


def test_of_many_workers_racing_for_a_loop_exactly_one_wins(
    fleet_engine: Engine, make_loop: Callable[[str], str]
) -> None:
    loop_id = make_loop("loop-a")
    workers = [f"build-0{i}" for i in range(4)]
    start = Barrier(len(workers))

    def contend(worker: str) -> Lease | None:
        start.wait()
        return acquire_alone(fleet_engine, loop_id, worker)

    with ThreadPoolExecutor(len(workers)) as pool:
        results = list(pool.map(contend, workers))

    winners = [lease for lease in results if lease is not None]
    assert len(winners) == 1
    assert winners[0].generation == 1


def test_an_expired_lease_is_taken_over_in_the_next_generation(
    fleet_engine: Engine, make_loop: Callable[[str], str]
) -> None:
    loop_id = make_loop("loop-a")
    first = acquire_alone(fleet_engine, loop_id, "build-01", SHORT)
    assert acquire_alone(fleet_engine, loop_id, "build-02") is None  # not expired yet

    time.sleep(SHORT.total_seconds() + 0.1)
    second = acquire_alone(fleet_engine, loop_id, "build-02")

    assert first is not None
    assert second is not None
    assert (second.worker, second.generation) == ("build-02", first.generation + 1)


def test_a_stale_holder_can_neither_renew_nor_write(
    fleet_engine: Engine, make_loop: Callable[[str], str]
) -> None:
    loop_id = make_loop("loop-a")
    stale = acquire_alone(fleet_engine, loop_id, "build-01", SHORT)
    time.sleep(SHORT.total_seconds() + 0.1)
    holder = acquire_alone(fleet_engine, loop_id, "build-02")
    assert stale is not None
    assert holder is not None

    with fleet_engine.begin() as conn:
        assert renew(conn, stale, LONG) is None
    assert record_iteration(fleet_engine, stale) is False
    assert record_iteration(fleet_engine, holder) is True

    assert iterations(fleet_engine, loop_id) == 1
    with fleet_engine.connect() as conn:
        assert current_lease(conn, loop_id) == holder


def test_an_expired_lease_nobody_took_over_is_still_its_holder_s_to_renew(
    fleet_engine: Engine, make_loop: Callable[[str], str]
) -> None:
    loop_id = make_loop("loop-a")
    lease = acquire_alone(fleet_engine, loop_id, "build-01", SHORT)
    assert lease is not None
    time.sleep(SHORT.total_seconds() + 0.1)

    with fleet_engine.begin() as conn:
        renewed = renew(conn, lease, LONG)

    assert renewed is not None
    assert renewed.generation == lease.generation
    assert acquire_alone(fleet_engine, loop_id, "build-02") is None


def test_only_the_holder_renews_by_its_name_and_generation(
    fleet_engine: Engine, make_loop: Callable[[str], str]
) -> None:
    loop_id = make_loop("loop-a")
    lease = acquire_alone(fleet_engine, loop_id, "build-01")
    assert lease is not None
    impostor = Lease(loop_id, "build-02", lease.generation)
    earlier = Lease(loop_id, "build-01", lease.generation - 1)

    with fleet_engine.begin() as conn:
        assert renew(conn, impostor, LONG) is None
        assert renew(conn, earlier, LONG) is None
        renewed = renew(conn, lease, LONG)

    assert renewed is not None
    assert lease.expires_at is not None
    assert renewed.expires_at is not None
    assert renewed.expires_at > lease.expires_at


def test_a_takeover_waits_for_a_write_in_flight_that_passed_the_fence(
    fleet_engine: Engine, make_loop: Callable[[str], str]
) -> None:
    loop_id = make_loop("loop-a")
    lease = acquire_alone(fleet_engine, loop_id, "build-01", SHORT)
    assert lease is not None
    time.sleep(SHORT.total_seconds() + 0.1)

    with ThreadPoolExecutor(1) as pool:
        with fleet_engine.begin() as writing:
            assert not fenced(writing, loop_id, lease.generation)
            takeover = pool.submit(acquire_alone, fleet_engine, loop_id, "build-02")
            assert still_waiting(takeover)  # no takeover between the check and the write
            writing.execute(text("UPDATE loops SET iteration = 1 WHERE id = :id"), {"id": loop_id})
        taken = takeover.result(timeout=10)

    assert taken is not None
    assert taken.generation == lease.generation + 1
    assert record_iteration(fleet_engine, lease) is False


def test_a_released_loop_is_free_at_once_and_its_last_holder_fenced(
    fleet_engine: Engine, make_loop: Callable[[str], str]
) -> None:
    loop_id = make_loop("loop-a")
    lease = acquire_alone(fleet_engine, loop_id, "build-01")
    assert lease is not None

    with fleet_engine.begin() as conn:
        assert release(conn, lease) is True
        assert release(conn, lease) is False  # released already
    after = acquire_alone(fleet_engine, loop_id, "build-02")

    assert after is not None
    assert after.generation == 2
    assert record_iteration(fleet_engine, lease) is False


def test_a_loop_that_does_not_exist_cannot_be_leased(fleet_engine: Engine) -> None:
    with pytest.raises(FleetError, match="cannot lease loop 'nope': there is no such loop"):
        acquire_alone(fleet_engine, "nope", "build-01")
