"""Fixtures for driving the pinned Aider (tests marked ``real_cli``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.aider.harness import INSTALL_HINT, aider_binary
from tests.agents.pinned import required


@pytest.fixture(scope="session")
def aider_bin() -> Path:
    """The pinned Aider (or ``$RALPHCTL_AIDER_BIN``); skips without it, but fails in CI (env
    ``CI`` set)."""
    return required(aider_binary(), INSTALL_HINT)
