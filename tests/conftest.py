"""Shared fixtures. The store ones run a test on SQLite and on a throwaway PostgreSQL server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralphctl.store.repository import Store
from tests.pg import create_schema, find_bin_dir, postgres_server

pytest_plugins = ["tests.realcli.fixtures"]


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """One PostgreSQL server for the session; fails in CI (or when required) if none can run."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        reason = (
            "PostgreSQL server binaries (initdb, pg_ctl) not found:"
            " run scripts/ensure-postgres or set RALPHCTL_PG_BIN"
        )
        if os.environ.get("CI") or os.environ.get("RALPHCTL_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    with postgres_server(bin_dir) as url:
        yield url


@pytest.fixture
def postgres_url(postgres_server_url: str) -> str:
    """A new, empty schema on the session's server: to the store, an empty database."""
    return create_schema(postgres_server_url, f"test_{uuid.uuid4().hex[:12]}")


@pytest.fixture(
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database, once per backend."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return str(tmp_path / "ralphctl.db")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """An open store on an empty database, once per backend."""
    with Store.open(store_url) as opened:
        yield opened
