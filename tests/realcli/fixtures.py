"""Fixtures (a pytest plugin) for driving the real Claude Code CLI against the mock API.

Tests using them must be marked ``@pytest.mark.real_cli``. ``tests/realcli/conftest.py``
re-exports them; elsewhere, the root ``tests/conftest.py`` loads this module with
``pytest_plugins = ["tests.realcli.fixtures"]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.pinned import required
from tests.realcli.harness import (
    INSTALL_HINT,
    NEWEST_VERSION,
    SUPPORTED_VERSIONS,
    RealClaude,
    claude_binary,
    real_claude_session,
)

#: Runs a test on the oldest and on the newest supported CLI (else: the newest only).
every_supported_version = pytest.mark.parametrize(
    "claude_version", SUPPORTED_VERSIONS, indirect=True, ids=lambda v: f"claude-{v}"
)


@pytest.fixture(scope="session")
def claude_version(request: pytest.FixtureRequest) -> str:
    """The pinned CLI version a test drives: the newest, unless the test is marked
    ``every_supported_version``."""
    version: str = getattr(request, "param", NEWEST_VERSION)
    return version


@pytest.fixture(scope="session")
def claude_bin(claude_version: str) -> Path:
    """The pinned CLI of ``claude_version`` (the newest may be replaced through
    ``$RALPHCTL_CLAUDE_BIN``); skips without it, but fails in CI (env ``CI`` set)."""
    binary = claude_binary(None if claude_version == NEWEST_VERSION else claude_version)
    return required(binary, f"Claude Code {claude_version}: {INSTALL_HINT}")


@pytest.fixture
def real_claude(claude_bin: Path, claude_version: str, tmp_path: Path) -> Iterator[RealClaude]:
    """A running mock, a temp home and project, and ``.env`` for running ``claude`` (or
    ralphctl, which finds the CLI through ``RALPHCTL_CLAUDE_BIN``) against them."""
    with real_claude_session(claude_bin, tmp_path, claude_version) as session:
        yield session
