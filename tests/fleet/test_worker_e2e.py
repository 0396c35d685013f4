"""Three "machines" run fleet loops end to end: worker processes with separate homes and
caches, the scripted agent, a local bare repository as the team's remote and the suite's
PostgreSQL as the backbone. Each loop's records match its remote branch commit by commit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ralphctl.engine.checkpoint import checkpoint_message
from ralphctl.store.repository import Store
from tests.fleet.remotes import IDENTITY, git

pytestmark = pytest.mark.postgres

LOOPS = 6
WAIT_S = 180.0
STEP = {"edits": [{"path": "NOTES.md", "append": "- one more step\n"}], "cost_usd": 0.01}
DONE = {**STEP, "text": "All done.\n<promise>COMPLETE</promise>"}


class Fleet:
    """Worker processes on one database and one remote, each with a home and cache of its own."""

    def __init__(self, root: Path, url: str, remote: Path) -> None:
        self.root = root
        self.url = url
        self.remote = remote
        self.workers: dict[str, subprocess.Popen[bytes]] = {}

    def env(self, home: Path) -> dict[str, str]:
        home.mkdir(parents=True, exist_ok=True)
        env = {key: value for key, value in os.environ.items() if key != "RALPHCTL_DB"}
        return env | IDENTITY | {"HOME": str(home), "RALPHCTL_CONFIG": str(home / "none.toml")}

    def ralphctl(self, *args: str) -> Any:
        """Run a command from a machine of its own; its JSON output."""
        done = subprocess.run(
            [sys.executable, "-m", "ralphctl", *args, "--db", self.url, "--json"],
            env=self.env(self.root / "desk"),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def start_loop(self, *steps: dict[str, Any], labels: tuple[str, ...] = ()) -> str:
        script = self.root / f"script-{len(list(self.root.glob('script-*')))}.json"
        script.write_text(json.dumps({"steps": list(steps)}))
        loop = self.ralphctl(
            "loops", "start", "--repo", str(self.remote), "--branch", "main",
            "--task", "Do the work.", "--agent", "scripted", "--script", str(script),
            "--cooldown", "0", *(f"--require-label={label}" for label in labels),
        )  # fmt: skip
        loop_id: str = loop["id"]
        return loop_id

    def start_worker(
        self, name: str, concurrency: int = 2, drain: str = "10s", labels: tuple[str, ...] = ()
    ) -> None:
        home = self.root / name
        home.mkdir(exist_ok=True)  # a worker restarted under its name keeps its home
        argv = [
            sys.executable, "-m", "ralphctl", "worker", "--db", self.url, "--name", name,
            "--concurrency", str(concurrency), "--cache", str(home / "cache"),
            "--lease-ttl", "6s", "--heartbeat", "1s", "--drain", drain,
            *(f"--label={label}" for label in labels),
        ]  # fmt: skip
        with (home / "worker.log").open("ab") as log:
            self.workers[name] = subprocess.Popen(
                argv, env=self.env(home), stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    def log(self, name: str) -> str:
        return (self.root / name / "worker.log").read_text()[-3000:]

    def stop(self) -> None:
        for process in self.workers.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.workers.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture
def fleet(tmp_path: Path, postgres_url: str, fleet_engine: object, remote: Path) -> Iterator[Fleet]:
    started = Fleet(tmp_path, postgres_url, remote)
    yield started
    started.stop()


def wait_until(condition: Callable[[], bool], fleet: Fleet) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            logs = {
                name: (fleet.root / name / "worker.log").read_text()[-3000:]
                for name in fleet.workers
            }
            raise AssertionError(f"timed out; worker logs: {logs}")
        time.sleep(0.5)


def statuses(url: str, loop_ids: list[str]) -> dict[str, str]:
    with Store.open(url) as store:
        return {loop_id: str(store.get_loop(loop_id).status) for loop_id in loop_ids}


def remote_commits(remote: Path, loop_id: str) -> list[tuple[str, str]]:
    """The loop branch's commits beyond main, oldest first: (sha, subject)."""
    log = git(remote, "log", "--reverse", "--format=%H %s", f"main..ralph/{loop_id}")
    return [tuple(line.split(" ", 1)) for line in log.splitlines()]  # type: ignore[misc]


def check_records_match_the_branch(url: str, remote: Path, loop_id: str) -> list[int]:
    """Each iteration that finished has its checkpoint on the remote branch, in order, and
    nothing else is there; returns the loop's iteration numbers."""
    with Store.open(url) as store:
        iterations = store.iterations(loop_id)
        checkpoints = store.checkpoints(loop_id)
    finished = [it.n for it in iterations if it.status == "ok"]
    commits = remote_commits(remote, loop_id)
    assert [subject for _sha, subject in commits] == [checkpoint_message(n) for n in finished]
    assert [(c.iteration, c.commit_sha) for c in checkpoints] == [
        (n, sha) for n, (sha, _subject) in zip(finished, commits, strict=True)
    ]
    return [it.n for it in iterations]


def test_three_workers_run_every_loop_to_completion_and_push_each_iteration(
    fleet: Fleet,
) -> None:
    loop_ids = [fleet.start_loop(STEP, STEP, DONE) for _ in range(LOOPS)]
    for name in ("build-01", "build-02", "build-03"):
        fleet.start_worker(name)

    wait_until(lambda: set(statuses(fleet.url, loop_ids).values()) == {"completed"}, fleet)

    for loop_id in loop_ids:
        assert check_records_match_the_branch(fleet.url, fleet.remote, loop_id) == [1, 2, 3]
    with Store.open(fleet.url) as store:
        loops = [store.get_loop(loop_id) for loop_id in loop_ids]
    assert {round(loop.cost_usd, 2) for loop in loops} == {0.03}
    ran_on = {Path(loop.workdir).relative_to(fleet.root).parts[0] for loop in loops}
    assert len(ran_on) >= 2, "the loops were shared out among the workers"
    workers = fleet.ralphctl("workers", "ls")
    assert [(w["name"], w["alive"], w["slots"]) for w in workers] == [
        ("build-01", True, 2),
        ("build-02", True, 2),
        ("build-03", True, 2),
    ]


def test_a_loop_whose_worker_is_killed_is_finished_by_another(fleet: Fleet) -> None:
    slow = {**STEP, "sleep_s": 30}
    loop_id = fleet.start_loop(STEP, slow, DONE)
    fleet.start_worker("build-01", concurrency=1)
    wait_until(lambda: running_iteration(fleet.url, loop_id) == 2, fleet)

    os.kill(fleet.workers["build-01"].pid, signal.SIGKILL)
    fleet.start_worker("build-02", concurrency=1)
    wait_until(lambda: statuses(fleet.url, [loop_id])[loop_id] == "completed", fleet)

    assert check_records_match_the_branch(fleet.url, fleet.remote, loop_id) == [1, 2, 3]
    with Store.open(fleet.url) as store:
        assert [it.status for it in store.iterations(loop_id)] == ["ok", "interrupted", "ok"]
        (resumed,) = store.events_of(loop_id, ["resumed"])
        loop = store.get_loop(loop_id)
    assert resumed.data["interrupted_iterations"] == [2]
    assert round(loop.cost_usd, 2) == 0.02  # the killed iteration reported nothing
    assert Path(loop.workdir).is_relative_to(fleet.root / "build-02")


def test_a_push_its_worker_died_before_recording_is_replaced_by_the_next_holder(
    fleet: Fleet, tmp_path: Path
) -> None:
    loop_id = fleet.start_loop(STEP, DONE)
    dead = tmp_path / "dead-worker-clone"
    git(tmp_path, "clone", "-q", str(fleet.remote), str(dead))
    (dead / "NOTES.md").write_text("pushed, then the worker died before the record committed\n")
    git(dead, "add", "NOTES.md")
    git(dead, "commit", "-qm", checkpoint_message(1))
    git(dead, "push", "-q", "origin", f"HEAD:refs/heads/ralph/{loop_id}")

    fleet.start_worker("build-01", concurrency=1)
    wait_until(lambda: statuses(fleet.url, [loop_id])[loop_id] == "completed", fleet)

    assert check_records_match_the_branch(fleet.url, fleet.remote, loop_id) == [1, 2]
    assert "died before" not in git(fleet.remote, "show", f"ralph/{loop_id}:NOTES.md")


def running_iteration(url: str, loop_id: str) -> int | None:
    with Store.open(url) as store:
        running = store.running_iterations(loop_id)
    return running[-1].n if running else None


def test_a_worker_paused_past_its_lease_is_fenced_out_and_drops_the_loop(fleet: Fleet) -> None:
    slow = {**STEP, "sleep_s": 20}
    loop_id = fleet.start_loop(STEP, slow, DONE)
    fleet.start_worker("build-01", concurrency=1)
    wait_until(lambda: running_iteration(fleet.url, loop_id) == 2, fleet)

    paused = fleet.workers["build-01"]
    os.killpg(paused.pid, signal.SIGSTOP)  # the worker and its agent: a frozen machine
    fleet.start_worker("build-02", concurrency=1)
    wait_until(lambda: statuses(fleet.url, [loop_id])[loop_id] == "completed", fleet)
    os.killpg(paused.pid, signal.SIGCONT)
    wait_until(lambda: "dropped" in fleet.log("build-01"), fleet)

    assert check_records_match_the_branch(fleet.url, fleet.remote, loop_id) == [1, 2, 3]
    with Store.open(fleet.url) as store:
        assert [it.status for it in store.iterations(loop_id)] == ["ok", "interrupted", "ok"]
        assert str(store.get_loop(loop_id).status) == "completed"
    assert paused.poll() is None, "the fenced worker goes on serving other loops"
    assert "Traceback" not in fleet.log("build-01"), "it let the job go quietly"


def test_a_worker_stopped_with_sigterm_hands_its_loop_to_another(fleet: Fleet) -> None:
    slow = {**STEP, "sleep_s": 30}
    loop_id = fleet.start_loop(STEP, slow, DONE)
    fleet.start_worker("build-01", concurrency=1, drain="1s")
    wait_until(lambda: running_iteration(fleet.url, loop_id) == 2, fleet)

    fleet.workers["build-01"].send_signal(signal.SIGTERM)
    assert fleet.workers["build-01"].wait(timeout=30) == 0
    fleet.start_worker("build-02", concurrency=1)
    wait_until(lambda: statuses(fleet.url, [loop_id])[loop_id] == "completed", fleet)

    assert check_records_match_the_branch(fleet.url, fleet.remote, loop_id) == [1, 2, 3]
    with Store.open(fleet.url) as store:
        assert [it.status for it in store.iterations(loop_id)] == ["ok", "interrupted", "ok"]


def test_a_loop_that_needs_a_label_waits_pending_for_a_worker_that_has_it(fleet: Fleet) -> None:
    needs_gpu = fleet.start_loop(STEP, DONE, labels=("gpu",))
    plain = fleet.start_loop(STEP, DONE)
    fleet.start_worker("build-01")
    wait_until(lambda: statuses(fleet.url, [plain])[plain] == "completed", fleet)
    time.sleep(2)  # a few of the worker's polls

    assert statuses(fleet.url, [needs_gpu])[needs_gpu] == "pending"
    fleet.start_worker("gpu-01", labels=("gpu", "linux"))
    wait_until(lambda: statuses(fleet.url, [needs_gpu])[needs_gpu] == "completed", fleet)
    with Store.open(fleet.url) as store:
        assert Path(store.get_loop(needs_gpu).workdir).is_relative_to(fleet.root / "gpu-01")
