"""Where the database is: the ``--db`` value, else ``RALPHCTL_DB``, else a per-user SQLite file.

Kept free of SQLAlchemy so that resolving and displaying a URL costs nothing at start-up.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ENV_VAR = "RALPHCTL_DB"

_PASSWORD = re.compile(r"^(?P<head>[^:/?#]+://[^:/@]*):(?P<password>.*)@(?P<tail>[^@]*)$")
_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def resolve_url(explicit: str | None) -> str:
    """Return the SQLAlchemy URL to use for ``explicit`` (the ``--db`` value, may be None).

    A value without ``://`` is a SQLite file path; ``postgresql://`` selects psycopg 3.
    """
    value = explicit or os.environ.get(ENV_VAR) or str(default_path())
    if "://" not in value:
        return f"sqlite:///{Path(value).expanduser().resolve()}"
    for scheme in _POSTGRES_SCHEMES:
        if value.startswith(scheme):
            return "postgresql+psycopg://" + value.removeprefix(scheme)
    return value


def default_path() -> Path:
    """The SQLite file used when nothing else is configured."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("ralphctl")) / "ralphctl.db"


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL; None for other backends and in-memory databases."""
    if not url.startswith("sqlite"):
        return None
    database = url.partition("://")[2].removeprefix("/").partition("?")[0]
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)


def mask(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``, for display."""
    match = _PASSWORD.match(url)
    if match is None:
        return url
    return f"{match['head']}:***@{match['tail']}"


def display(url: str) -> str:
    """How to name the database in a message: the quoted SQLite path, else the masked URL."""
    path = sqlite_path(url)
    return repr(str(path)) if path is not None else mask(url)
