"""The workers' registry on the real PostgreSQL: register, beat, leave, and who is alive."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from sqlalchemy import Engine

from ralphctl.fleet.registry import deregister, heartbeat, list_workers, register

pytestmark = pytest.mark.postgres


def test_a_registered_worker_is_listed_with_its_labels_and_slots(fleet_engine: Engine) -> None:
    with fleet_engine.begin() as conn:
        registered = register(conn, "build-01", ["gpu", "agent=codex", "gpu"], 4, "0.1.0")
    with fleet_engine.connect() as conn:
        now, listed = list_workers(conn)

    assert listed == [registered]
    assert registered.labels == ("agent=codex", "gpu")
    assert registered.started_at == registered.heartbeat_at <= now
    assert registered.is_alive(now, timedelta(seconds=10))


def test_a_worker_that_stops_beating_is_no_longer_alive(fleet_engine: Engine) -> None:
    stale_after = timedelta(milliseconds=300)
    with fleet_engine.begin() as conn:
        register(conn, "build-01", [], 1, "0.1.0")
        register(conn, "build-02", [], 1, "0.1.0")
    time.sleep(stale_after.total_seconds() + 0.1)

    with fleet_engine.begin() as conn:
        assert heartbeat(conn, "build-02") is True
    with fleet_engine.connect() as conn:
        now, listed = list_workers(conn)

    assert {w.name: w.is_alive(now, stale_after) for w in listed} == {
        "build-01": False,
        "build-02": True,
    }


def test_a_restarted_worker_replaces_its_row_and_a_drained_one_leaves(
    fleet_engine: Engine,
) -> None:
    with fleet_engine.begin() as conn:
        first = register(conn, "build-01", ["gpu"], 2, "0.1.0")
        again = register(conn, "build-01", [], 8, "0.2.0")
    with fleet_engine.begin() as conn:
        assert list_workers(conn)[1] == [again]
        assert again.started_at >= first.started_at
        assert deregister(conn, "build-01") is True
        assert deregister(conn, "build-01") is False
        assert heartbeat(conn, "build-01") is False
        assert list_workers(conn)[1] == []


def test_a_worker_runs_at_least_one_loop_at_a_time(fleet_engine: Engine) -> None:
    with fleet_engine.begin() as conn, pytest.raises(ValueError, match="at least one loop"):
        register(conn, "build-01", [], 0, "0.1.0")
