"""Starting a fleet loop: stored pending with where its work lives, and queued for a worker.

The loop is planned as every loop is (``engine.starting.prepare_loop``: settings, workflow,
agent and mode checked), but not on this machine's files: its work dir is the repository,
which the submitting machine need not have, so only the user's settings file and the
request's settings apply (a ``.ralphctl.toml`` in the repository does not). A fleet loop
checkpoints and pushes after every iteration (``checkpoint_interval`` 1) on its own branch,
so ``--checkpoint-branch``, ``--worktree`` and hook mode (one session, on one machine) are
refused. Its work dir reads as the repository until a worker checks it out.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from ralphctl.engine.starting import InvalidSpec, LoopRequest, prepare_loop
from ralphctl.fleet.backbone import open_fleet
from ralphctl.fleet.fleetloops import FleetLoop, normal_labels, store_fleet_loop
from ralphctl.fleet.queue import defer_loop, new_app
from ralphctl.store.records import LoopRecord
from ralphctl.store.url import resolve_url

FLEET_SETTINGS = {"checkpoint_interval": 1}


def plan_fleet_loop(request: LoopRequest, repo_url: str, base_branch: str) -> LoopRecord:
    """The pending record of a fleet loop; InvalidSpec (or ConfigError) if it cannot run."""
    if request.mode != "fresh":
        raise InvalidSpec("a fleet loop runs in fresh mode (hook mode is one session on one host)")
    if request.worktree:
        raise InvalidSpec("--worktree: a fleet loop works on its own branch, ralph/<loop-id>")
    if request.settings.get("checkpoint_branch") is not None:
        raise InvalidSpec("--checkpoint-branch: a fleet loop pushes to its own branch")
    if not repo_url.strip() or not base_branch.strip():
        raise InvalidSpec("a fleet loop needs a repository (--repo) and a base branch (--branch)")
    with tempfile.TemporaryDirectory(prefix="ralphctl-fleet-") as nowhere:
        settings = {**request.settings, **FLEET_SETTINGS}
        plan = prepare_loop(replace(request, workdir=Path(nowhere), settings=settings))
    return replace(plan.loop, workdir=repo_url)


async def submit_fleet_loop(
    url: str | None, request: LoopRequest, repo_url: str, base_branch: str, labels: list[str]
) -> LoopRecord:
    """Store a new fleet loop pending and queue its start; FleetError without PostgreSQL."""
    try:
        required = normal_labels(labels)
    except ValueError as exc:
        raise InvalidSpec(str(exc)) from None
    loop = plan_fleet_loop(request, repo_url, base_branch)
    resolved = resolve_url(url)
    engine = open_fleet(resolved)
    try:
        with engine.begin() as conn:
            store_fleet_loop(conn, loop, FleetLoop(loop.id, repo_url, base_branch, required))
    finally:
        engine.dispose()
    app = new_app(resolved)
    async with app.open_async():
        await defer_loop(app, loop.id, required)
    return loop
