"""Unix socket paths must stay short (about 100 bytes): they live in their own temp dir."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def sockets() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="rh-") as folder:
        yield Path(folder)
