"""Fixtures for running agents under a real bubblewrap sandbox (``scripts/ensure-bwrap``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ralphctl.agents.sandbox_host import sandbox_problem


@pytest.fixture
def bwrap() -> None:
    """Skips where no sandbox can be made (fails in CI, which installs bubblewrap)."""
    problem = sandbox_problem(network=False)
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home directory holding a (fake) ssh key, made the user's home for the test."""
    folder = tmp_path / "home"
    (folder / ".ssh").mkdir(parents=True)
    (folder / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    return folder
