"""PostgreSQL as the fleet's backbone: the store's schema and procrastinate's, side by side.

Fleet mode runs on PostgreSQL only: workers on many machines share its rows, its row locks and
its LISTEN/NOTIFY, which a SQLite file cannot give them. The job queue is procrastinate's,
in the same database (docs/fleet.md says why). Its schema is applied whole, once, by the
first worker or server to open the database (under an advisory lock, so two that start
together do not both apply it); pyproject pins procrastinate to the minor version whose
schema this is, because a newer one would need its migrations run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

import psycopg
from sqlalchemy import Connection, Engine, func, select, text
from sqlalchemy.exc import SQLAlchemyError

from ralphctl.fleet.errors import FleetError

try:
    from procrastinate.schema import SchemaManager
except ImportError as missing:  # an optional dependency: the ``fleet`` extra
    raise FleetError(
        "fleet mode needs procrastinate: install ralphctl with its extra, ralphctl[fleet]"
    ) from missing
from ralphctl.store.database import cause_of, open_engine
from ralphctl.store.url import display, mask, resolve_url

#: The advisory lock held while procrastinate's schema is looked for and applied ("ralph").
QUEUE_SCHEMA_LOCK = 0x72616C7068


def open_fleet(url: str | None, *, pool_size: int | None = None) -> Engine:
    """An engine on the fleet's database (``--db``, else ``RALPHCTL_DB``) with both schemas
    applied, keeping ``pool_size`` connections (SQLAlchemy's default when None); FleetError
    when that database is not PostgreSQL."""
    resolved = resolve_url(url)
    if not resolved.startswith("postgresql"):
        raise FleetError(
            f"fleet mode needs PostgreSQL (--db postgresql://…), not {display(resolved)}:"
            " workers on other machines share the database's rows, locks and notifications"
        )
    engine = open_engine(resolved, pool_size=pool_size)
    try:
        with engine.begin() as conn:
            apply_queue_schema(conn)
    except SQLAlchemyError as exc:
        engine.dispose()
        raise FleetError(
            f"cannot apply the job queue's schema to {mask(resolved)} ({cause_of(exc)})"
        ) from exc
    return engine


def require_postgresql(conn: Connection) -> None:
    """FleetError unless ``conn`` is a PostgreSQL connection."""
    if conn.dialect.name != "postgresql":
        raise FleetError(f"fleet mode needs PostgreSQL, not {conn.dialect.name}")


def database_now(conn: Connection) -> datetime:
    """The database server's clock as the statement runs (after any lock it waited for): the
    one clock of every worker's leases and heartbeats, whatever the machines' clocks say."""
    now: datetime = conn.execute(select(func.clock_timestamp())).scalar_one()
    return now


def apply_queue_schema(conn: Connection) -> bool:
    """procrastinate's tables, types and functions, unless the database has them already;
    True when they were applied now."""
    require_postgresql(conn)
    conn.execute(select(func.pg_advisory_xact_lock(QUEUE_SCHEMA_LOCK)))
    if conn.execute(text("SELECT to_regclass('procrastinate_jobs')")).scalar() is not None:
        return False
    # psycopg itself: its simple query protocol runs the schema's many statements at once.
    driver = cast(psycopg.Connection[Any], conn.connection.driver_connection)
    driver.execute(SchemaManager.get_schema())
    return True
