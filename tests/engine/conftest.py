"""Fixtures of the engine tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ralphctl.store.repository import Store
from tests.engine.victims import Spawn, spawner


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Starts stand-ins for orphaned agents (``victims.spawner``); kills them at the end."""
    with spawner() as start:
        yield start


@pytest.fixture
def db(tmp_path: Path) -> Store:
    """A new SQLite store of the test's own."""
    return Store.open(str(tmp_path / "ralphctl.db"))


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty work dir (not a git repository)."""
    path = tmp_path / "work"
    path.mkdir()
    return path
