"""`ralphctl logs`: every iteration's output as text or raw, and following a running loop."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ralphctl.store.repository import Store
from ralphctl.store.transcript_chunks import iter_transcript
from tests.cli.test_cli import DONE, env, ralphctl, scripted_run, wait_for_iteration, workdir

__all__ = ["env", "workdir"]  # fixtures, shared with tests/cli/test_cli.py

pytestmark = pytest.mark.timeout(120)

NOISY = {"text": "first pass", "garbage": ["npm WARN something old"], "cost_usd": 0.1}


def finished_loop(env: dict[str, str], workdir: Path) -> str:
    done = scripted_run(workdir, env, NOISY, DONE)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["loop_id"])


def test_logs_show_every_iteration_as_text(env, workdir):
    loop_id = finished_loop(env, workdir)

    shown = ralphctl("logs", loop_id, env=env)

    assert shown.returncode == 0, shown.stderr
    first, second = shown.stdout.split("── iteration 2 ──\n")
    assert first.startswith("── iteration 1 ──\n── session ")
    assert "npm WARN something old\nfirst pass\n── finished: ok · $0.10\n" in first
    assert "Finished.\n<promise>COMPLETE</promise>\n── finished: ok" in second


def test_raw_logs_are_the_agent_s_output_byte_for_byte(env, workdir):
    loop_id = finished_loop(env, workdir)

    shown = subprocess.run(
        [sys.executable, "-m", "ralphctl", "logs", loop_id, "--iteration", "1", "--raw"],
        env=env,
        capture_output=True,
        check=False,
    )

    with Store.open(env["RALPHCTL_DB"]) as store:
        stored = b"".join(iter_transcript(store, loop_id, 1))
    assert shown.returncode == 0
    assert shown.stdout == stored
    assert b"npm WARN something old\n" in stored


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--raw", "--text"), "--raw and --text exclude each other"),
        (("--iteration", "7"), "has no iteration 7"),
        (("--iteration", "0"), "Invalid value for '--iteration'"),
    ],
)
def test_bad_arguments_exit_2_saying_what_is_wrong(env, workdir, args, message):
    loop_id = finished_loop(env, workdir)

    shown = ralphctl("logs", loop_id, *args, env=env)

    assert shown.returncode == 2
    assert message in shown.stderr


def test_an_unknown_loop_exits_2(env):
    shown = ralphctl("logs", "nosuchloop", env=env)

    assert shown.returncode == 2
    assert "no loop with id 'nosuchloop'" in shown.stderr


def test_follow_prints_output_while_the_loop_runs_and_ends_with_it(env, workdir):
    slow = {**NOISY, "sleep_s": 4}
    script = workdir.parent / "script.json"
    script.write_text(json.dumps({"steps": [slow, DONE]}))
    run_args = ["run", "-t", "t", "--script", str(script), "--cooldown", "0"]
    run_args += ["--checkpoint-interval", "0", "--workdir", str(workdir), "--json"]
    runner = subprocess.Popen(
        [sys.executable, "-m", "ralphctl", *run_args], env=env, stdout=subprocess.PIPE, text=True
    )
    loop_id = wait_for_iteration(env["RALPHCTL_DB"], 1)
    follower = subprocess.Popen(
        [sys.executable, "-m", "ralphctl", "logs", loop_id, "--follow"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert follower.stdout is not None
    seen = []
    while "npm WARN something old\n" not in seen:
        seen.append(follower.stdout.readline())
    assert runner.poll() is None  # shown while the agent still works

    rest, _ = follower.communicate(timeout=60)
    runner.communicate(timeout=60)
    assert follower.returncode == 0
    assert "── iteration 2 ──\n" in rest
    assert rest.rstrip().splitlines()[-1].startswith("── finished: ok")
