"""The migrations build exactly the schema in schema.py, and can be undone and redone."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from ralphctl.store.database import open_engine
from ralphctl.store.migrations import alembic_config
from ralphctl.store.repository import Store
from ralphctl.store.schema import HEAD_REVISION, metadata
from ralphctl.store.url import resolve_url

TABLES = {"loops", "iterations", "events", "errors", "checkpoints", "alembic_version"}


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
