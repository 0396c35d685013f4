"""Fixtures for driving the pinned Gemini CLI against the mock Gemini API (tests marked
``real_cli``): one mock per module, a fresh home and project per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.gemini.harness import (
    INSTALL_HINT,
    RealGemini,
    gemini_binary,
    gemini_in,
    gemini_mock,
)
from tests.agents.pinned import required
from tests.mockapi import MockApi


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    """The pinned CLI (or ``$RALPHCTL_GEMINI_BIN``); skips without it, but fails in CI."""
    return required(gemini_binary(), INSTALL_HINT)


@pytest.fixture(scope="module")
def mock_api() -> Iterator[MockApi]:
    """One mock Gemini API for a module's tests; each test loads its own script."""
    with gemini_mock() as server:
        yield server


@pytest.fixture
def gemini(gemini_bin: Path, mock_api: MockApi, tmp_path: Path) -> RealGemini:
    """A fresh home and project for the CLI, talking to the module's mock."""
    return gemini_in(gemini_bin, mock_api, tmp_path)
