"""A workflow run by `ralphctl run`: its tracker, continue message and plugins do what
workflow.json says (real processes; the scripted agent, or a stand-in `claude`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ralphctl.agents.claude import ClaudeAdapter
from ralphctl.domain.config import LoopConfig
from ralphctl.engine.hookmode.setup import prepare
from ralphctl.store.repository import Store
from ralphctl.workflows.model import Workflow
from tests.hook.helpers import body_of, fields_of
from tests.workflows.conftest import write_workflow

TRACKER = "# Flow\n\nWrite FLOW DONE as the last line when every box is ticked.\n\n- [ ] step"
TRACKER_GLOB = ".ralph/loops/*/loop-tracker.md"


def append_to_tracker(line: str) -> str:
    return f"for f in {TRACKER_GLOB}; do printf '%s\\n' '{line}' >> \"$f\"; done"


@pytest.fixture
def env(tmp_path: Path, registry_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "RALPHCTL_DB": str(tmp_path / "ralphctl.db"),
        "RALPHCTL_CONFIG": str(tmp_path / "no-user-config.toml"),
        "RALPHCTL_WORKFLOWS_DIR": str(registry_dir),
        "COLUMNS": "200",
    }


def ralphctl(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ralphctl", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_workflow_loop_in_fresh_mode_keeps_its_tracker_and_continue_message(tmp_path, env):
    loop = {"completionMarker": "FLOW DONE", "continueMessage": "Next box, please."}
    flow = write_workflow(tmp_path / "flow", tracker=TRACKER, loop=loop, plugins=["review"])
    assert ralphctl("workflow", "install", str(flow), env=env).returncode == 0
    work = tmp_path / "work"
    work.mkdir()
    steps = [
        {"text": "Ticked it.", "bash": [append_to_tracker("- [x] step")], "save_prompt": "p"},
        {"text": "Checked.", "bash": [append_to_tracker("FLOW DONE")], "save_prompt": "p"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": steps}))
    done = ralphctl(
        "run", "the parser", "-w", "flow", "--script", str(script), "-C", str(work),
        "--cooldown", "0", "--json", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["iterations"]) == ("completed", 2)
    assert "plugins are ignored: the scripted agent loads no plugins" in done.stderr
    first, second = (work / "p").read_text().split("\x1e\n")[:2]
    assert first.startswith("Do the parser")
    assert second.startswith("Next box, please.\n\nDo the parser")
    assert f"Progress tracker: `.ralph/loops/{summary['loop_id']}/loop-tracker.md`" in second


def test_a_workflows_loop_settings_carry_its_tracker_continue_message_and_plugins():
    flow = Workflow.model_validate(
        {
            "name": "flow",
            "promptTemplate": "Do {input}",
            "plugins": ["review@tools"],
            "loop": {"continueMessage": "Next.", "trackerTemplate": "# T"},
        }
    )
    assert flow.loop_settings() == {
        "completion_signal": "<promise>COMPLETE</promise>",
        "max_iterations": 100,
        "tracker_template": "# T",
        "continue_message": "Next.",
        "plugins": ["review@tools"],
    }


def test_a_single_run_workflow_keeps_no_tracker():
    flow = Workflow.model_validate(
        {"name": "once", "promptTemplate": "Do {input}", "loop": {"enabled": False}}
    )
    assert flow.loop_settings() == {
        "completion_signal": "<promise>COMPLETE</promise>",
        "max_iterations": 1,
    }


@pytest.mark.parametrize("mode", ["fresh", "hook"])
def test_a_workflow_plugin_that_is_not_installed_stops_run_before_the_loop_starts(
    tmp_path, env, mode
):
    flow = write_workflow(tmp_path / "flow", plugins=["review@tools"])
    assert ralphctl("workflow", "install", str(flow), env=env).returncode == 0
    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir()
    claude.write_text("#!/bin/sh\necho should not run >&2\nexit 1\n")
    claude.chmod(0o755)
    env = {**env, "RALPHCTL_CLAUDE_BIN": str(claude), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")}
    work = tmp_path / "work"
    work.mkdir()
    done = ralphctl("run", "the parser", "-w", "flow", "-C", str(work), "--mode", mode, env=env)
    assert done.returncode == 3, done.stderr
    assert "review@tools is not installed (claude plugin install review@tools)" in done.stderr
    assert json.loads(ralphctl("status", "--json", env=env).stdout) == []


def test_a_hook_mode_session_is_armed_with_the_loops_tracker_template_and_continue_message(
    tmp_path,
):
    work = tmp_path / "work"
    work.mkdir()
    config = LoopConfig(tracker_template=TRACKER, continue_message="Next box, please.")
    with Store.open(str(tmp_path / "ralphctl.db")) as store:
        ready = prepare(store, ClaudeAdapter(), "the parser", work, config, name="flow")
    tracker = Path(ready.session.tracker)
    assert body_of(tracker).endswith(TRACKER + "\n")
    assert fields_of(tracker)["continue_message"] == "Next box, please."
