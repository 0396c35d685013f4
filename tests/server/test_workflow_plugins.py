"""Starting a workflow's loop through the API: a plugin it needs that is not installed is a
422 naming it, and no loop is created."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture
def flow_with_a_missing_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    registry = tmp_path / "workflows"
    (registry / "flow").mkdir(parents=True)
    flow = {"name": "flow", "promptTemplate": "Do {input}", "plugins": ["review@tools"]}
    (registry / "flow" / "workflow.json").write_text(json.dumps(flow))
    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir()
    claude.write_text("#!/bin/sh\nexit 1\n")
    claude.chmod(0o755)
    monkeypatch.setenv("RALPHCTL_WORKFLOWS_DIR", str(registry))
    monkeypatch.setenv("RALPHCTL_CLAUDE_BIN", str(claude))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))
    return "flow"


def test_a_missing_workflow_plugin_is_a_422_and_no_loop(
    client, new_workdir, flow_with_a_missing_plugin
):
    body = {
        "task": "the parser",
        "workdir": str(new_workdir()),
        "workflow": flow_with_a_missing_plugin,
    }
    response = client.post("/api/loops", json=body)
    assert response.status_code == 422, response.text
    assert "review@tools is not installed" in response.json()["detail"]
    assert client.get("/api/loops").json() == []
