"""Fixtures of the engine tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.engine.victims import Spawn, spawner


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Starts stand-ins for orphaned agents (``victims.spawner``); kills them at the end."""
    with spawner() as start:
        yield start
