"""Alembic migrations, packaged with ralphctl and configured in code (no alembic.ini).

To add a revision, change ``schema.py``, draft ``versions/NNNN_what.py`` with
``command.revision(alembic_config(conn), "what", autogenerate=True, rev_id="NNNN")`` on a
connection to a database at the old head, review it, then bump ``HEAD_REVISION`` (a test checks
that they agree).
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect

from ralphctl.store.errors import StoreError
from ralphctl.store.revision import HEAD_REVISION
from ralphctl.store.url import display

_HERE = Path(__file__).parent
#: Serialises concurrent migrations on PostgreSQL (an arbitrary, fixed advisory-lock key).
_PG_LOCK_KEY = 0x7261_6C70


def alembic_config(connection: Connection) -> Config:
    """An Alembic config that runs this package's migrations on ``connection``."""
    config = Config()
    config.set_main_option("script_location", str(_HERE))
    config.attributes["connection"] = connection
    return config


def known_revisions() -> set[str]:
    """Every revision this version of ralphctl ships."""
    script = ScriptDirectory(str(_HERE))
    return {revision.revision for revision in script.walk_revisions()}


def upgrade(engine: Engine) -> None:
    """Bring the schema to head, once even when several processes open a new database at once.

    Raises StoreError for a database newer than this code, or a SQLite file of another program.
    """
    where = display(engine.url.render_as_string())
    with engine.begin() as conn:
        _lock(conn)
        current = MigrationContext.configure(conn).get_current_revision()
        if current == HEAD_REVISION:
            return
        if current is not None and current not in known_revisions():
            raise StoreError(
                f"the database {where} has schema revision {current!r}, newer than this ralphctl"
                f" knows (up to {HEAD_REVISION!r}): upgrade ralphctl"
            )
        if current is None and conn.dialect.name == "sqlite" and _foreign_tables(conn):
            raise StoreError(f"{where} is not a ralphctl database (it holds other tables)")
        command.upgrade(alembic_config(conn), "head")


def _foreign_tables(conn: Connection) -> set[str]:
    return set(inspect(conn).get_table_names()) - {"alembic_version"}


def _lock(conn: Connection) -> None:
    """Take the database-wide write lock for the rest of the transaction."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    elif conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_LOCK_KEY})")
