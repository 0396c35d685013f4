"""`ralphctl run --mode hook --agent X` is refused for an agent that has a hook but cannot
keep a headless session going through it, and the refusal says why: Cursor (no Cursor CLI
installs here, and its docs do not say that headless runs fire the stop hook) and OpenCode
(`opencode run` exits at its session's first idle, measured in
tests/agents/opencode/test_opencode_plugin.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ralphctl.agents.registry import all_specs, same_session_agents

REFUSED = {spec.name: spec for spec in all_specs() if spec.capabilities.no_hook_mode_reason}


def test_cursor_and_opencode_declare_why_they_cannot_run_hook_mode():
    assert sorted(REFUSED) == ["cursor", "opencode"]
    assert not set(REFUSED) & set(same_session_agents())


@pytest.mark.parametrize("agent", sorted(REFUSED))
def test_run_in_hook_mode_refuses_the_agent_with_its_reason(agent: str, tmp_path: Path):
    env = {
        **os.environ,
        "RALPHCTL_CONFIG": str(tmp_path / "none.toml"),
        "RALPHCTL_SERVER_DIR": str(tmp_path / "no-server"),
        "COLUMNS": "1000",
    }
    argv = ["run", "Fix the bug", "--mode", "hook", "--agent", agent, "--dry-run"]
    refused = subprocess.run(
        [sys.executable, "-m", "ralphctl", *argv, "-C", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert refused.returncode == 2
    said = " ".join(refused.stderr.split())
    assert f"which the {agent} agent cannot do" in said
    assert REFUSED[agent].capabilities.no_hook_mode_reason in said
    assert not (tmp_path / "no-server").exists()
