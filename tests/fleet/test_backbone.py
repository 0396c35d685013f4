"""The fleet's database: PostgreSQL only, with procrastinate's schema applied once beside the
store's, and procrastinate's own worker running jobs on it."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import procrastinate
import pytest
from sqlalchemy import Engine, text

from ralphctl.fleet.backbone import apply_queue_schema, open_fleet
from ralphctl.fleet.errors import FleetError
from ralphctl.fleet.leases import acquire
from ralphctl.store.database import open_engine
from ralphctl.store.repository import Store
from ralphctl.store.url import resolve_url


def test_fleet_mode_refuses_a_sqlite_database(tmp_path: Path) -> None:
    with pytest.raises(FleetError, match=r"fleet mode needs PostgreSQL \(--db postgresql://…\)"):
        open_fleet(str(tmp_path / "ralphctl.db"))
    assert not (tmp_path / "ralphctl.db").exists()


def test_leases_refuse_a_sqlite_connection(tmp_path: Path) -> None:
    engine = open_engine(resolve_url(str(tmp_path / "ralphctl.db")))
    try:
        with engine.begin() as conn, pytest.raises(FleetError, match="PostgreSQL, not sqlite"):
            acquire(conn, "loop-a", "build-01", timedelta(minutes=1))
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_opening_the_fleet_applies_the_job_queue_s_schema_once(
    postgres_url: str, fleet_engine: Engine
) -> None:
    open_fleet(postgres_url).dispose()  # a second worker starting: nothing to apply

    with fleet_engine.begin() as conn:
        assert apply_queue_schema(conn) is False
        table = conn.execute(text("SELECT to_regclass('procrastinate_jobs')")).scalar()
    assert table == "procrastinate_jobs"


@pytest.mark.postgres
def test_the_store_keeps_working_beside_the_job_queue(
    postgres_url: str, fleet_engine: Engine
) -> None:
    with Store.open(postgres_url) as store:
        assert store.list_loops() == []


@pytest.mark.postgres
def test_procrastinate_defers_and_runs_a_job_on_the_fleet_database(
    postgres_url: str, fleet_engine: Engine
) -> None:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=postgres_url))
    done: list[int] = []

    @app.task(name="double")
    def double(n: int) -> None:
        done.append(2 * n)

    async def defer_then_work() -> None:
        async with app.open_async():
            await double.defer_async(n=21)
            await app.run_worker_async(wait=False, install_signal_handlers=False)

    asyncio.run(defer_then_work())

    assert done == [42]
    with fleet_engine.connect() as conn:
        status = conn.execute(text("SELECT status FROM procrastinate_jobs")).scalar_one()
    assert status == "succeeded"
