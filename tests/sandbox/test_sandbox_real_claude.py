"""The real Claude Code CLI under ``ralphctl run --sandbox``, against the Messages API mock.

Claude itself is told to allow everything (``bypassPermissions``, as root too: ralphctl sets
``IS_SANDBOX=1``), so what stops it is the sandbox alone: it reaches the mock on 127.0.0.1
(network allowed), writes in the work dir, and cannot read ``~/.ssh``, write outside the work
dir or signal the runner.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.mockapi import Reply, ToolCall
from tests.realcli.harness import RealClaude

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(60), pytest.mark.usefixtures("bwrap")]

DONE = "Done.\n<promise>COMPLETE</promise>"


def start(real_claude: RealClaude, *flags: str) -> subprocess.Popen[str]:
    """``ralphctl run --sandbox FLAGS`` in the project, with the CLI and the mock."""
    env = {
        **real_claude.env,
        "RALPHCTL_DB": str(real_claude.home / "ralphctl.db"),
        "RALPHCTL_CONFIG": "/nonexistent.toml",
    }
    argv = [sys.executable, "-m", "ralphctl", "run", "Write a.txt.", "--agent", "claude"]
    argv += ["--sandbox", "--json", "--max-iterations", "5", *flags]
    return subprocess.Popen(
        argv,
        cwd=real_claude.project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(loop: subprocess.Popen[str]) -> dict[str, object]:
    out, err = loop.communicate(timeout=50)
    assert loop.returncode == 0, err
    summary: dict[str, object] = json.loads(out)
    return summary


def test_claude_in_the_sandbox_lands_its_work_and_is_refused_the_rest(
    real_claude: RealClaude,
) -> None:
    (real_claude.home / ".ssh").mkdir()
    (real_claude.home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    outside = real_claude.project.parent / "outside.txt"  # written to the sandbox's own /tmp
    kill = "while [ ! -s runner.pid ]; do sleep 0.05; done; kill -TERM $(cat runner.pid)"
    real_claude.server.set_script(
        ToolCall("Write", {"file_path": "a.txt", "content": "a\n"}),
        ToolCall("Bash", {"command": "cat ~/.ssh/id_ed25519"}),
        ToolCall("Write", {"file_path": str(outside), "content": "escaped\n"}),
        ToolCall("Bash", {"command": kill}),
        Reply(DONE),
    )

    loop = start(real_claude, "--permission-mode", "bypassPermissions", "--cooldown", "0")
    (real_claude.project / "runner.pid").write_text(str(loop.pid))
    summary = finish(loop)

    assert (summary["status"], summary["iterations"]) == ("completed", 1)
    assert (real_claude.project / "a.txt").read_text() == "a\n"
    assert not outside.exists()
    results = real_claude.server.main_requests[-1].tool_results()  # the whole conversation
    key, killed = (json.dumps(results[i].get("content")) for i in (1, 3))
    assert results[1].get("is_error")
    assert "No such file or directory" in key
    assert "PRIVATE KEY" not in key
    assert results[3].get("is_error")
    assert "No such process" in killed


def test_a_same_session_loop_runs_its_stop_hook_from_inside_the_sandbox(
    real_claude: RealClaude,
) -> None:
    real_claude.server.set_script(
        ToolCall("Write", {"file_path": "a.txt", "content": "a\n"}),
        Reply("One."),
        Reply("Two."),
        Reply(DONE),
    )

    summary = finish(start(real_claude, "--mode", "hook"))

    assert (summary["status"], summary["iterations"]) == ("completed", 3)  # 3 Stops reached us
    assert (real_claude.project / "a.txt").read_text() == "a\n"
