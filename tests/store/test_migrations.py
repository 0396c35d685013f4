"""The migrations build exactly the schema in schema.py, and can be undone and redone."""

from __future__ import annotations

from dataclasses import replace

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from ralphctl.store.database import open_engine
from ralphctl.store.migrations import alembic_config
from ralphctl.store.repository import Store
from ralphctl.store.revision import HEAD_REVISION
from ralphctl.store.schema import metadata
from ralphctl.store.transcript_chunks import append_chunk, iter_transcript
from ralphctl.store.url import resolve_url
from tests.store.factories import T0, new_loop, started_iteration

NOTIFICATION_TABLES = {"notifications", "notification_cursor"}
FLEET_TABLES = {"fleet_loops", "loop_leases", "workers"}
TABLES = {
    "loops",
    "iterations",
    "events",
    "errors",
    "checkpoints",
    "transcript_chunks",
    "notifications",
    "notification_cursor",
    "fleet_loops",
    "loop_leases",
    "workers",
    "alembic_version",
}


def test_the_migrated_schema_matches_the_metadata(store_url: str) -> None:
    engine = open_engine(resolve_url(store_url))

    with engine.connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn), metadata)
    engine.dispose()

    assert differences == []


def test_migrations_go_down_to_nothing_and_back_up(store_url: str) -> None:
    engine = open_engine(resolve_url(store_url))

    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "base")
    with engine.connect() as conn:
        assert set(inspect(conn).get_table_names()) == {"alembic_version"}
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "head")
    with engine.connect() as conn:
        assert set(inspect(conn).get_table_names()) == TABLES
        assert MigrationContext.configure(conn).get_current_revision() == HEAD_REVISION
    engine.dispose()


def test_opening_a_downgraded_database_upgrades_it(store_url: str) -> None:
    engine = open_engine(resolve_url(store_url))
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "base")
    engine.dispose()

    with Store.open(store_url) as store:
        assert store.list_loops() == []


def test_0003_adds_each_iteration_s_agent_and_goes_back_keeping_the_iterations(
    store_url: str,
) -> None:
    with Store.open(store_url) as store:
        store.create_loop(new_loop("loop-mig"))
        store.begin_iteration(
            replace(started_iteration("loop-mig", 1), agent_pid=4321, agent_started_at=T0)
        )
    engine = open_engine(resolve_url(store_url))

    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0002")
    with engine.connect() as conn:
        columns = {c["name"] for c in inspect(conn).get_columns("iterations")}
        kept = conn.execute(text("SELECT loop_id, n, status FROM iterations")).all()
    assert not columns & {"agent_pid", "agent_started_at"}
    assert [tuple(row) for row in kept] == [("loop-mig", 1, "running")]

    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0003")
    engine.dispose()
    with Store.open(store_url) as store:
        (iteration,) = store.iterations("loop-mig")
    assert iteration == started_iteration("loop-mig", 1)  # no agent recorded before 0003


def test_0004_adds_transcripts_and_going_back_drops_only_them(store_url: str) -> None:
    with Store.open(store_url) as store:
        store.create_loop(new_loop("loop-mig"))
        store.begin_iteration(started_iteration("loop-mig", 1))
        append_chunk(store, "loop-mig", 1, 0, b"output")
    engine = open_engine(resolve_url(store_url))

    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0003")
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
        kept = conn.execute(text("SELECT loop_id, n FROM iterations")).all()
    engine.dispose()
    assert tables == TABLES - {"transcript_chunks", *NOTIFICATION_TABLES, *FLEET_TABLES}
    assert [tuple(row) for row in kept] == [("loop-mig", 1)]

    with Store.open(store_url) as store:  # opening upgrades again
        assert list(iter_transcript(store, "loop-mig", 1)) == []


def test_0005_adds_the_notification_outbox_and_going_back_drops_only_it(store_url: str) -> None:
    with Store.open(store_url) as store:
        store.create_loop(new_loop("loop-mig"))
        store.append_event("loop-mig", "completed", {})
    engine = open_engine(resolve_url(store_url))

    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0004")
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
    engine.dispose()
    assert tables == TABLES - NOTIFICATION_TABLES - FLEET_TABLES

    with Store.open(store_url) as store:  # opening upgrades again; the history is not notified
        (event,) = store.events_since(0)
        with store.transaction("read the cursor") as conn:
            cursor = conn.execute(text("SELECT seq FROM notification_cursor")).scalar_one()
    assert cursor == event.seq


def test_0006_adds_the_fleet_tables_and_going_back_drops_only_them(store_url: str) -> None:
    with Store.open(store_url) as store:
        store.create_loop(new_loop("loop-mig"))
        with store.transaction("hold the loop") as conn:
            conn.execute(
                text("INSERT INTO loop_leases (loop_id, generation) VALUES ('loop-mig', 1)")
            )
    engine = open_engine(resolve_url(store_url))

    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0005")
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
    engine.dispose()
    assert tables == TABLES - FLEET_TABLES

    with Store.open(store_url) as store:  # opening upgrades again, with no lease held
        assert [loop.id for loop in store.list_loops()] == ["loop-mig"]
        with store.transaction("read the leases") as conn:
            assert conn.execute(text("SELECT COUNT(*) FROM loop_leases")).scalar_one() == 0
