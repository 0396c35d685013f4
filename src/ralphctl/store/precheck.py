"""A cheap look at the database before an agent starts, without SQLAlchemy.

``ralphctl run`` spawns its first agent before the store is open (start-up budget), so a
database that cannot work must be found first: a SQLite file's directory must exist (or be
creatable) and be writable, the file itself, if present, must be empty or a SQLite database
that is ralphctl's (or has no tables yet); a PostgreSQL URL must parse. A few milliseconds;
whatever only opening can tell (a PostgreSQL server down, a full disk) is found while the first
agent runs, which is then stopped.
"""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path

from ralphctl.store.errors import StoreError
from ralphctl.store.url import mask, resolve_url, sqlite_path

SQLITE_HEADER = b"SQLite format 3\x00"
#: Tables every ralphctl database has (Alembic's, and the first migration's).
OUR_TABLES = frozenset({"alembic_version", "loops"})
_POSTGRES_SCHEMES = ("postgresql", "postgresql+psycopg", "postgres")


def check_database(explicit: str | None) -> None:
    """StoreError, saying what is wrong, if the database ``explicit`` names (the ``--db``
    value, else ``RALPHCTL_DB``, else the default file) cannot be ralphctl's."""
    url = resolve_url(explicit)
    if url.startswith("sqlite"):
        path = sqlite_path(url)
        if path is not None:
            _check_sqlite(path)
        return
    scheme = url.partition("://")[0]
    if scheme not in _POSTGRES_SCHEMES:
        raise StoreError(
            f"unsupported database URL {mask(url)!r}: use a file path, sqlite:/// or postgresql://"
        )
    _check_postgres_url(url)


def _check_sqlite(path: Path) -> None:
    try:
        if path.exists():
            _check_sqlite_file(path)
        else:
            _check_directory(path)
    except OSError as exc:  # a directory on the way that we may not enter
        raise StoreError(f"cannot use the database {str(path)!r} ({exc.strerror})") from None


def _check_directory(path: Path) -> None:
    """The file can be created: its directory exists and is writable, or can be created."""
    existing = path.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise StoreError(f"cannot create the database {str(path)!r}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise StoreError(
            f"cannot create the database {str(path)!r}: the directory {existing} is not writable"
        )


def _check_sqlite_file(path: Path) -> None:
    """An existing file: empty, or a SQLite database with ralphctl's tables or none."""
    if not path.is_file():
        raise StoreError(f"the database {str(path)!r} is not a file")
    if not os.access(path, os.R_OK | os.W_OK) or not os.access(path.parent, os.W_OK | os.X_OK):
        raise StoreError(
            f"the database {str(path)!r} is not writable (SQLite needs the file and its "
            "directory writable)"
        )
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise StoreError(f"cannot read the database {str(path)!r} ({exc.strerror})") from None
    if not header:
        return  # an empty file becomes a database
    if header != SQLITE_HEADER:
        raise StoreError(
            f"{str(path)!r} is not a ralphctl database: it is not a SQLite file (give "
            "ralphctl a file of its own)"
        )
    tables = _tables(path)
    if tables and not OUR_TABLES.issubset(tables):
        shown = ", ".join(sorted(tables)[:5]) + (", …" if len(tables) > 5 else "")
        raise StoreError(
            f"{str(path)!r} is not a ralphctl database: it holds another application's tables "
            f"({shown}); give ralphctl a file of its own"
        )


def _tables(path: Path) -> set[str]:
    import sqlite3

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
        try:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the SQLite database {str(path)!r} ({exc})") from None
    return {str(name) for (name,) in rows}


def _check_postgres_url(url: str) -> None:
    try:
        urllib.parse.urlsplit(url).port  # noqa: B018 - parsing the port is the check
    except ValueError as exc:
        raise StoreError(f"invalid database URL {mask(url)!r} ({exc})") from None
