"""Fixtures for driving the pinned Codex CLI against the mock Responses API.

Like the Claude ones (tests/realcli/fixtures.py): a missing CLI skips the test, but fails it
in CI (env ``CI`` set), with the command that installs it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.codex.harness import INSTALL_HINT, RealCodex, codex_binary, real_codex_session
from tests.agents.pinned import required


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return required(codex_binary(), INSTALL_HINT)


@pytest.fixture
def real_codex(codex_bin: Path, tmp_path: Path) -> Iterator[RealCodex]:
    """A running mock, temp homes and a project, and ``.env`` for running ``codex`` (or
    ralphctl, which finds the CLI through ``RALPHCTL_CODEX_BIN``) against them."""
    with real_codex_session(codex_bin, tmp_path) as session:
        yield session
