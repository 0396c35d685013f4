"""`ralphctl run --agent-command …`: the command agent as a user runs it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

#: Prints what its prompt file holds about the loop, then completes.
AGENT = """
import pathlib, sys
prompt = pathlib.Path(sys.argv[1]).read_text()
print("iteration 1" in prompt and "Count the files." in prompt)
print("usage: 4000 in, 500 out")
print("<promise>COMPLETE</promise>")
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    return {
        **os.environ,
        "RALPHCTL_DB": str(tmp_path / "ralphctl.db"),
        "RALPHCTL_CONFIG": str(tmp_path / "no-user-config.toml"),
        "XDG_RUNTIME_DIR": str(runtime),
        "COLUMNS": "250",
    }


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    (path / "ralphctl.toml").write_text('[loops.llm]\nmodel = "gpt-5-codex"\n')
    return path


def ralphctl(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ralphctl", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )


def agent_command(tmp_path: Path) -> str:
    program = tmp_path / "agent.py"
    program.write_text(AGENT)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(program))} {{prompt_file}}"


def test_a_command_agent_completes_and_its_tokens_are_priced(env, workdir, tmp_path):
    done = ralphctl(
        *("run", "Count the files.", "-C", str(workdir), "--json", "--cooldown", "0"),
        *("--agent-command", agent_command(tmp_path)),
        *("--agent-tokens-regex", r"usage: (?P<input>\d+) in, (?P<output>\d+) out"),
        env=env,
    )

    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["status"] == "completed"
    assert summary["cost_usd"] == pytest.approx((4000 * 1.25 + 500 * 10.0) / 1_000_000)
    (loop,) = json.loads(ralphctl("status", "--json", env=env).stdout)
    assert loop["agent"] == "command"
    assert list((tmp_path / "run" / "ralphctl" / "prompts").iterdir()) == []


def test_dry_run_shows_the_command_with_its_prompt_file(env, workdir, tmp_path):
    shown = ralphctl(
        *("run", "Count the files.", "-C", str(workdir), "--dry-run"),
        *("--agent-command", "my-agent --in {prompt_file}", "--isolate-agent-config"),
        env=env,
    )

    assert shown.returncode == 0, shown.stderr
    command = next(line for line in shown.stdout.splitlines() if line.startswith("command "))
    assert command.startswith("command my-agent --in ")
    assert command.endswith("-1-<session id>.md'")  # the first iteration's
    assert str(tmp_path / "run" / "ralphctl" / "prompts") in command
    assert "prompt of iteration 1 (in its prompt file)" in shown.stdout
    assert '"agent_command" ' not in shown.stdout  # the table shows settings by row
    rows = {line.split("│")[1].strip(): line for line in shown.stdout.splitlines() if "│" in line}
    assert "flag" in rows["agent_command"]
    assert "true" in rows["isolate_agent_config"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--agent", "claude", "--agent-command", "x"), "agent_command: not a setting of"),
        (("--agent-command", "x 'open"), "cannot be split into arguments"),
        (("--agent-command", "x", "--agent-cost-regex", "Cost: (.+)"), "(?P<cost>"),
        (("--agent", "command"), "needs its command line"),
    ],
)
def test_a_command_agent_set_up_wrong_is_a_usage_error(env, workdir, args, message):
    refused = ralphctl("run", "Count.", "-C", str(workdir), "--dry-run", *args, env=env)

    assert refused.returncode == 2
    assert message in refused.stderr + refused.stdout


def test_a_configured_isolation_can_be_turned_off_for_one_loop(env, workdir):
    (workdir / "ralphctl.toml").write_text("[loops.defaults]\nisolate_agent_config = true\n")

    shown = ralphctl(
        *("run", "Fix it.", "-C", str(workdir), "--dry-run", "--agent", "claude"),
        "--no-isolate-agent-config",
        env=env,
    )

    assert shown.returncode == 0, shown.stderr
    rows = {line.split("│")[1].strip(): line for line in shown.stdout.splitlines() if "│" in line}
    assert "false" in rows["isolate_agent_config"]
    assert "--setting-sources" not in shown.stdout


def test_an_isolated_claude_run_reads_only_the_project_settings(env, workdir):
    shown = ralphctl(
        *("run", "Fix it.", "-C", str(workdir), "--dry-run", "--agent", "claude"),
        "--isolate-agent-config",
        env=env,
    )

    assert shown.returncode == 0, shown.stderr
    assert "--setting-sources project,local" in shown.stdout


def test_a_prompt_too_long_for_an_argument_stops_the_loop_with_the_fix(env, workdir):
    task = "Do this. " * 1000

    dry = ralphctl(
        "run", task, "-C", str(workdir), "--agent-command", "echo {prompt}", "--dry-run", env=env
    )
    ran = ralphctl(
        "run", task, "-C", str(workdir), "--agent-command", "echo {prompt}", "--json", env=env
    )

    assert dry.returncode == 2
    assert "use {prompt_file}" in dry.stderr
    assert ran.returncode == 3
    summary = json.loads(ran.stdout)
    assert (summary["status"], summary["stop_reason"]) == ("failed", "agent_unavailable")
    assert "use {prompt_file}" in summary["stop_detail"]
