"""Fixtures (a pytest plugin) for driving the real Claude Code CLI against the mock API.

Tests using them must be marked ``@pytest.mark.real_cli``. ``tests/realcli/conftest.py``
re-exports them; elsewhere, the root ``tests/conftest.py`` loads this module with
``pytest_plugins = ["tests.realcli.fixtures"]``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realcli.harness import INSTALL_HINT, RealClaude, claude_binary, real_claude_session


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The pinned CLI; skips without it, but fails in CI (env ``CI`` set)."""
    binary = claude_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(INSTALL_HINT)
        pytest.skip(INSTALL_HINT)
    return binary


@pytest.fixture
def real_claude(claude_bin: Path, tmp_path: Path) -> Iterator[RealClaude]:
    """A running mock, a temp home and project, and ``.env`` for running ``claude`` (or
    ralphctl, which finds the CLI through ``RALPHCTL_CLAUDE_BIN``) against them."""
    with real_claude_session(claude_bin, tmp_path) as session:
        yield session
