"""A temp home for Claude Code and ralphctl, and snapshots to compare trees before and after."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from ralphctl.plugin.layout import Interpreter

#: Not the running interpreter: a path that needs quoting, to prove it is quoted everywhere.
PYTHON = Interpreter("/opt/my tools/venv/bin/python3")


@dataclass(frozen=True)
class Homes:
    root: Path
    claude: Path  # CLAUDE_CONFIG_DIR
    marketplace: Path  # RALPHCTL_PLUGIN_DIR
    project: Path


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Homes:
    claude = tmp_path / "home" / ".claude"
    marketplace = tmp_path / "data" / "claude-plugin"
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("RALPHCTL_PLUGIN_DIR", str(marketplace))
    monkeypatch.chdir(project)
    return Homes(tmp_path, claude, marketplace, project)


def snapshot(root: Path) -> dict[str, str | None]:
    """Every file (with its text) and folder (None) under ``root``, by relative path."""
    return {
        str(path.relative_to(root)): path.read_text() if path.is_file() else None
        for path in sorted(root.rglob("*"))
    }
