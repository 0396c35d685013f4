"""Fixtures for driving the pinned OpenCode CLI against the mock Chat Completions API.

Like the Claude ones (tests/realcli/fixtures.py): a missing CLI skips the test, but fails it
in CI (env ``CI`` set), with the command that installs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.opencode.harness import INSTALL_HINT, opencode_binary
from tests.agents.pinned import required


@pytest.fixture(scope="session")
def opencode_bin() -> Path:
    return required(opencode_binary(), INSTALL_HINT)
