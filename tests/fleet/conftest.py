"""Fleet fixtures: a fleet database on the suite's throwaway PostgreSQL, with loops in it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ralphctl.fleet.backbone import open_fleet
from ralphctl.store.repository import Store
from tests.fleet.remotes import make_remote
from tests.store.factories import new_loop


@pytest.fixture
def fleet_engine(postgres_url: str) -> Iterator[Engine]:
    """An engine on an empty fleet database (both schemas applied)."""
    engine = open_fleet(postgres_url)
    yield engine
    engine.dispose()


@pytest.fixture
def make_loop(postgres_url: str, fleet_engine: Engine) -> Callable[[str], str]:
    """Creates a pending loop in the fleet database; returns its id."""

    def make(loop_id: str) -> str:
        with Store.open(postgres_url) as store:
            store.create_loop(new_loop(loop_id))
        return loop_id

    return make


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """The team's repository: a bare repository whose ``main`` has one commit."""
    return make_remote(tmp_path)
