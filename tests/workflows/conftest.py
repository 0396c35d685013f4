"""Workflow folders on disk and a private registry for each test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def write_workflow(folder: Path, tracker: str | None = None, **fields: Any) -> Path:
    """A workflow folder with ``workflow.json`` and, when given, ``tracker.md``."""
    folder.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"name": folder.name, "promptTemplate": "Do {input}", **fields}
    if tracker is not None:
        (folder / "tracker.md").write_text(tracker)
        data.setdefault("loop", {})["trackerTemplate"] = "tracker.md"
    (folder / "workflow.json").write_text(json.dumps(data, indent=2))
    return folder


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (hidden ones too) with its text, by relative path."""
    return {
        str(path.relative_to(root)): path.read_text()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def registry_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$RALPHCTL_WORKFLOWS_DIR`` for this test; it does not exist until something is installed."""
    root = tmp_path / "registry"
    monkeypatch.setenv("RALPHCTL_WORKFLOWS_DIR", str(root))
    return root
