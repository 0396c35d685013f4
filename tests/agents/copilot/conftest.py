"""Fixtures for driving the pinned Copilot CLI (tests marked ``real_cli``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.copilot.harness import INSTALL_HINT, RealCopilot, copilot_binary, copilot_session
from tests.agents.pinned import required


@pytest.fixture(scope="session")
def copilot_bin() -> Path:
    """The pinned CLI (or ``$RALPHCTL_COPILOT_BIN``); skips without it, but fails in CI (env
    ``CI`` set)."""
    return required(copilot_binary(), INSTALL_HINT)


@pytest.fixture
def real_copilot(copilot_bin: Path, tmp_path: Path) -> Iterator[RealCopilot]:
    """A running mock, a temp home and project, and ``.env`` for running ``copilot`` (or
    ralphctl, which finds the CLI through ``RALPHCTL_COPILOT_BIN``) against them."""
    with copilot_session(copilot_bin, tmp_path) as session:
        yield session
