"""`ralphctl loops start --repo … --branch …`: a fleet loop stored pending with where its work
lives, and its start queued once for a worker with the labels it requires."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from typer.testing import CliRunner, Result

from ralphctl.cli.app import app
from ralphctl.cli.common import UsageError
from ralphctl.fleet.fleetloops import FleetLoop, fleet_loop
from ralphctl.fleet.queue import defer_loop, new_app, queue_for, queues_served
from ralphctl.store.repository import Store
from ralphctl.store.url import resolve_url

runner = CliRunner()


def start(db: str, *flags: str) -> Result:
    args = ["loops", "start", "--db", db, "--task", "Do the work.", "--json", *flags]
    return runner.invoke(app, args, env={"COLUMNS": "200", "RALPHCTL_CONFIG": "/nonexistent"})


def refusal(result: Result) -> str:
    """What the command says as it refuses (``ralphctl`` prints it, exit status 2)."""
    assert isinstance(result.exception, UsageError), result.output
    return " ".join(str(result.exception).split())


def test_a_worker_serves_the_queues_of_every_subset_of_its_labels() -> None:
    assert queues_served([]) == ["ralph"]
    assert queues_served(["gpu", "linux"]) == [
        "ralph",
        "ralph:gpu",
        "ralph:linux",
        "ralph:gpu,linux",
    ]
    assert queue_for(["agent=codex", "gpu"]) == "ralph:agent=codex,gpu"


def test_a_fleet_loop_on_sqlite_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    result = start(str(tmp_path / "ralphctl.db"), "--repo", "git@host:team/app.git")

    assert "fleet mode needs PostgreSQL (--db postgresql://…)" in refusal(result)


@pytest.mark.parametrize(
    ("flags", "why"),
    [
        (["--mode", "hook"], "a fleet loop runs in fresh mode"),
        (["--worktree"], "--worktree: a fleet loop works on its own branch"),
        (["--checkpoint-branch", "saves"], "--checkpoint-branch: a fleet loop pushes"),
        (["--require-label", "a,b"], "a label cannot hold a comma"),
    ],
)
def test_what_a_fleet_loop_cannot_do_is_refused(tmp_path: Path, flags: list[str], why: str) -> None:
    result = start(str(tmp_path / "ralphctl.db"), "--repo", "git@host:team/app.git", *flags)

    assert why in refusal(result)


@pytest.mark.postgres
def test_a_fleet_loop_is_stored_pending_and_its_start_queued_once(
    postgres_url: str, fleet_engine: Engine
) -> None:
    repo = "git@host:team/app.git"
    result = start(
        postgres_url, "--repo", repo, "--branch", "trunk", "--require-label", "gpu",
        "--agent", "scripted", "--script", "/tmp/script.json", "--max-cost", "20",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    loop_id = json.loads(result.output)["id"]

    with Store.open(postgres_url) as store:
        loop = store.get_loop(loop_id)
    assert (str(loop.status), loop.workdir) == ("pending", repo)
    assert (loop.config["checkpoint_interval"], loop.config["max_cost_usd"]) == (1, 20.0)
    with fleet_engine.begin() as conn:
        assert fleet_loop(conn, loop_id) == FleetLoop(loop_id, repo, "trunk", ("gpu",))
        jobs = conn.execute(
            text("SELECT queue_name, lock, queueing_lock, args FROM procrastinate_jobs")
        ).all()
    assert [tuple(job) for job in jobs] == [("ralph:gpu", loop_id, loop_id, {"loop_id": loop_id})]
    assert defer_again(postgres_url, loop_id) is False


def defer_again(url: str, loop_id: str) -> bool:
    async def defer() -> bool:
        queue = new_app(resolve_url(url))
        async with queue.open_async():
            return await defer_loop(queue, loop_id, ["gpu"])

    return asyncio.run(defer())
