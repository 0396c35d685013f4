"""kill -9 of a runner at random moments loses no money and leaves nothing behind (issue 10,
item 11).

A runner (``one_loop``) drives a paced stand-in agent; it is killed with SIGKILL, resumed by a
new runner, killed again, and so on; a last runner takes the loop to its iteration limit.
Then: iterations are numbered 1..N with none missing, the loop's totals are the sums of its
iterations, no agent of the loop runs, and every interrupted iteration whose agent printed its
``result`` line has that cost, marked ``recovered``. The first kill always lands in that
window (the agent waits after its result); the others at random moments.
``RALPHCTL_RUNNER_KILLS`` sets the number of random kills (default: 3, or 20 in `make reliability`).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ralphctl.store.records import IterationRecord
from ralphctl.store.repository import Store
from ralphctl.store.transcript_chunks import iter_transcript
from tests.engine.victims import of_loop
from tests.reliability.figures import Figure
from tests.reliability.paced_agent import COST_USD
from tests.reliability.scale import scaled
from tests.reliability.test_agent_output import claude_stand_in

ROOT = Path(__file__).parents[2]
AGENT = Path(__file__).with_name("paced_agent.py")
RANDOM_KILLS = int(os.environ.get("RALPHCTL_RUNNER_KILLS", str(scaled(3, 20))))
LOOP_ID = "killed-loop"


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def printed_result(store: Store, iteration: IterationRecord) -> bool:
    output = b"".join(iter_transcript(store, LOOP_ID, iteration.n))
    return any(line.startswith(b'{"type": "result"') for line in output.splitlines())


@pytest.mark.timeout(600)
def test_a_runner_killed_at_random_moments_loses_no_cost_and_leaves_no_orphan(
    tmp_path: Path, figures: Callable[[Figure], None]
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    url = str(tmp_path / "ralphctl.db")
    max_iterations = RANDOM_KILLS + 4
    env = {**os.environ, "RALPHCTL_CLAUDE_BIN": str(claude_stand_in(tmp_path, AGENT))}
    argv = [sys.executable, "-m", "tests.reliability.one_loop", url, str(workdir), LOOP_ID]
    argv.append(str(max_iterations))

    def runner() -> subprocess.Popen[str]:
        return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)

    def kill(process: subprocess.Popen[str]) -> None:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)

    (workdir / "linger").touch()  # the first kill: after the result line, before the record
    first = runner()
    wait_for((workdir / "result-printed").exists)
    time.sleep(0.3)
    kill(first)
    (workdir / "linger").unlink()

    rng = random.Random(int(os.environ.get("RALPHCTL_KILL_SEED", "9")))
    kills_done = 1
    for _ in range(RANDOM_KILLS):
        process = runner()
        time.sleep(rng.uniform(0.3, 2.5))
        if process.poll() is None:
            kill(process)
            kills_done += 1
        else:
            process.communicate()
    last = runner()
    out, _ = last.communicate(timeout=300)
    assert last.returncode == 0

    with Store.open(url) as store:
        loop = store.get_loop(LOOP_ID)
        iterations = store.iterations(LOOP_ID)
        recoverable = [
            it for it in iterations if it.status == "interrupted" and printed_result(store, it)
        ]
    recovered = sum(it.cost_source == "recovered" for it in iterations)
    figures(
        Figure(
            "runner kill -9",
            kills_done,
            "kills",
            failures=len(of_loop(LOOP_ID)),
            note=f"{len(iterations)} iterations, "
            f"{sum(it.status == 'interrupted' for it in iterations)} interrupted, "
            f"{recovered} costs recovered, final status {json.loads(out)['status']}",
        )
    )
    assert [it.n for it in iterations] == list(range(1, len(iterations) + 1))
    assert loop.iteration == len(iterations) == max_iterations
    assert all(it.status in ("ok", "interrupted") for it in iterations)
    assert loop.cost_usd == pytest.approx(sum(it.cost_usd or 0.0 for it in iterations))
    assert loop.tokens_input == sum(it.tokens_input for it in iterations)
    assert loop.tokens_output == sum(it.tokens_output for it in iterations)
    assert recoverable, "the first kill came after a result line"
    assert all((it.cost_usd, it.cost_source) == (COST_USD, "recovered") for it in recoverable)
    assert of_loop(LOOP_ID) == []
