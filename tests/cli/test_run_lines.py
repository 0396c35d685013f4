"""What `ralphctl run` and `ralphctl resume` print says each thing once."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_cli import (
    env,
    ralphctl,
    script,
    start_slow_loop,
    wait_for_iteration,
    workdir,
)
from tests.engine.victims import asleep_in, wait_for

__all__ = ["env", "workdir"]  # the fixtures of tests/cli/test_cli.py, used here too


def test_an_agent_error_is_printed_once_per_iteration(env, workdir: Path) -> None:
    failing = {"text": "Trying.", "is_error": True, "error": "API Error: 500 boom"}
    result = ralphctl(
        "run",
        "--task",
        "Do the work.",
        "--script",
        script(workdir, failing),
        "--cooldown=0",
        "--checkpoint-interval=0",
        "--max-iterations=2",
        "--workdir",
        str(workdir),
        env=env,
    )
    assert result.returncode == 1, result.stderr
    reported = [line for line in result.stdout.splitlines() if "agent reported an error" in line]
    assert len(reported) == 2, result.stdout
    assert all(line.startswith("error: ") for line in reported)


def test_resume_after_a_runner_died_says_once_what_it_found(env, workdir: Path) -> None:
    runner = start_slow_loop(env, workdir)
    loop_id = wait_for_iteration(env["RALPHCTL_DB"], 3)
    wait_for(lambda: asleep_in(workdir / "agent.pid"), timeout=30)
    runner.kill()
    runner.wait(timeout=10)

    resumed = ralphctl("resume", loop_id, env=env)

    assert resumed.returncode == 0, resumed.stderr
    printed = (resumed.stdout + resumed.stderr).splitlines()
    about_it = [line for line in printed if "interrupted" in line]
    assert len(about_it) == 1, printed
    assert about_it[0].startswith("warning: iteration 3 was left running")
    assert sum("was still running" in line for line in printed) == 1, printed
