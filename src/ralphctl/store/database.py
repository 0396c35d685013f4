"""Open a database: the engine, per-connection settings, and a schema at the head revision.

A database already at ``HEAD_REVISION`` costs one query; Alembic is imported only to create or
upgrade a schema.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, make_url
from sqlalchemy.exc import ArgumentError, OperationalError, ProgrammingError, SQLAlchemyError

from ralphctl.store.errors import StoreError
from ralphctl.store.revision import HEAD_REVISION
from ralphctl.store.sqlite_direct import apply_settings
from ralphctl.store.url import display, mask, sqlite_path

_PG_CONNECT_TIMEOUT_S = 10


def open_engine(url: str, *, pool_size: int | None = None) -> Engine:
    """An engine for ``url`` whose schema is at head; StoreError with a clear message if not.
    ``pool_size``: PostgreSQL connections kept open (as many again opened for a burst)."""
    engine = _create(url, pool_size)
    try:
        with engine.connect() as conn:
            revision = schema_revision(conn)
        if revision != HEAD_REVISION:
            from ralphctl.store.migrations import upgrade

            upgrade(engine)
    except StoreError:
        engine.dispose()
        raise
    except SQLAlchemyError as exc:
        engine.dispose()
        raise StoreError(describe_failure(url, exc)) from exc
    return engine


def schema_revision(conn: Connection) -> str | None:
    """The revision recorded in ``alembic_version``; None when the schema was never created."""
    try:
        return conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
    except (OperationalError, ProgrammingError):
        conn.rollback()
        if inspect(conn).has_table("alembic_version"):
            raise
        return None


def describe_failure(url: str, exc: SQLAlchemyError) -> str:
    """A one-line, user-facing account of why the database at ``url`` could not be used."""
    cause = cause_of(exc)
    if url.startswith("sqlite"):
        if isinstance(exc, OperationalError):
            return f"cannot open the SQLite database {display(url)} ({cause})"
        return f"{display(url)} is not a ralphctl database ({cause})"
    parsed = make_url(url)
    if isinstance(exc, OperationalError) and parsed.get_backend_name() == "postgresql":
        where = f"{parsed.host or 'localhost'}:{parsed.port or 5432}"
        return f"cannot connect to PostgreSQL at {where} ({cause})"
    return f"database {mask(url)} failed ({cause})"


def cause_of(exc: Exception) -> str:
    """The driver's own message, on one line."""
    orig = getattr(exc, "orig", None)
    return " ".join(str(orig if orig is not None else exc).split())


def _create(url: str, pool_size: int | None = None) -> Engine:
    try:
        backend = make_url(url).get_backend_name()
    except ArgumentError as exc:
        raise StoreError(f"invalid database URL {mask(url)!r} ({exc})") from exc
    if backend == "sqlite":
        path = sqlite_path(url)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the directory for {display(url)} ({exc})") from exc
        engine = create_engine(url)
        event.listen(engine, "connect", _sqlite_settings)
        return engine
    if backend == "postgresql":
        connect_args = (
            {} if "connect_timeout" in url else {"connect_timeout": _PG_CONNECT_TIMEOUT_S}
        )
        sized = {} if pool_size is None else {"pool_size": pool_size, "max_overflow": pool_size}
        return create_engine(url, pool_pre_ping=True, connect_args=connect_args, **sized)
    raise StoreError(
        f"unsupported database URL {mask(url)!r}: use a file path, sqlite:/// or postgresql://"
    )


def _sqlite_settings(dbapi_connection: Any, _record: Any) -> None:
    apply_settings(dbapi_connection)
