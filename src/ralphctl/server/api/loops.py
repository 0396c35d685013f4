"""``/api/loops``: list, start, read and control loops, and read what each one recorded."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, status
from fastapi import Path as PathParam
from starlette.concurrency import run_in_threadpool

from ralphctl.domain.states import LoopStatus
from ralphctl.engine.starting import LoopRequest
from ralphctl.fleet.placement import placements
from ralphctl.server.api.deps import ManagerDep, StoreDep
from ralphctl.server.api.params import Since
from ralphctl.server.errors import error_responses
from ralphctl.server.schemas import (
    CheckpointOut,
    ErrorOut,
    Event,
    IterationOut,
    Loop,
    LoopCreate,
)
from ralphctl.store.records import LoopRecord
from ralphctl.store.repository import Store

router = APIRouter(prefix="/api/loops", tags=["loops"])

LoopId = Annotated[
    str, PathParam(description="A loop id, or a unique prefix of one (at least 4 characters).")
]


@router.get("")
def list_loops(
    store: StoreDep,
    status: Annotated[list[LoopStatus] | None, Query(description="Any of these.")] = None,
    workdir: Annotated[str | None, Query(description="Only loops in this work dir.")] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> list[Loop]:
    """Loops, newest first."""
    loops = store.list_loops(status, limit=None if workdir else limit)
    if workdir is not None:
        wanted = {os.path.normpath(workdir), os.path.realpath(workdir)}  # as given, or resolved
        loops = [loop for loop in loops if os.path.normpath(loop.workdir) in wanted][:limit]
    return listed(store, loops)


@router.post("", status_code=status.HTTP_201_CREATED, responses=error_responses(409, 429))
async def create_loop(body: LoopCreate, manager: ManagerDep) -> Loop:
    """Start a loop (or queue it as pending when ``max_concurrent`` loops already run).

    The agent runs with the server user's permissions in ``workdir``. ``mode: hook`` runs one
    Claude Code session kept going by its Stop hook: no fresh-only settings (cooldown,
    checkpoints, gates, …); it pauses at its session's next Stop and resumes the same session,
    but once it ended otherwise it cannot be resumed.
    """
    request = LoopRequest(
        task=body.task,
        workdir=Path(body.workdir),
        settings=body.overrides(),
        name=body.name,
        mode=body.mode,
        workflow=body.workflow,
        worktree=body.worktree,
    )
    return Loop.of(await manager.create(request, queue=body.queue))


@router.get("/{loop_id}", responses=error_responses(404))
def get_loop(loop_id: LoopId, store: StoreDep) -> Loop:
    (loop,) = listed(store, [store.get_loop(loop_id)])
    return loop


@router.post("/{loop_id}/pause", responses=error_responses(404, 409))
async def pause_loop(
    loop_id: LoopId,
    store: StoreDep,
    manager: ManagerDep,
    now: Annotated[bool, Query(description="Interrupt the running iteration.")] = False,
) -> Loop:
    """Pause between iterations, or at once with ``now`` (the iteration is recorded
    interrupted)."""
    return Loop.of(await manager.pause(await _full_id(store, loop_id), now=now))


@router.post("/{loop_id}/resume", responses=error_responses(404, 409, 429))
async def resume_loop(loop_id: LoopId, store: StoreDep, manager: ManagerDep) -> Loop:
    """Continue with the loop's iteration, cost, tokens and breaker state intact."""
    return Loop.of(await manager.resume(await _full_id(store, loop_id)))


@router.post("/{loop_id}/stop", responses=error_responses(404, 409))
async def stop_loop(loop_id: LoopId, store: StoreDep, manager: ManagerDep) -> Loop:
    return Loop.of(await manager.stop(await _full_id(store, loop_id)))


@router.get("/{loop_id}/iterations", responses=error_responses(404))
def list_iterations(loop_id: LoopId, store: StoreDep) -> list[IterationOut]:
    return [IterationOut.of(it) for it in store.iterations(store.get_loop(loop_id).id)]


@router.get("/{loop_id}/checkpoints", responses=error_responses(404))
def list_checkpoints(loop_id: LoopId, store: StoreDep) -> list[CheckpointOut]:
    return [CheckpointOut.of(c) for c in store.checkpoints(store.get_loop(loop_id).id)]


@router.get("/{loop_id}/errors", responses=error_responses(404))
def list_errors(loop_id: LoopId, store: StoreDep) -> list[ErrorOut]:
    return [ErrorOut.of(e) for e in store.errors(store.get_loop(loop_id).id)]


@router.get("/{loop_id}/events", responses=error_responses(404))
def list_loop_events(
    loop_id: LoopId,
    store: StoreDep,
    since: Since = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> list[Event]:
    """The loop's events after ``since``, oldest first."""
    full_id = store.get_loop(loop_id).id
    return [Event.of(e) for e in store.events_since(since, loop_id=full_id, limit=limit)]


def listed(store: Store, loops: Sequence[LoopRecord]) -> list[Loop]:
    """``loops`` as answered, each fleet loop with where it works (``fleet.placement``)."""
    found = placements(store, [loop.id for loop in loops])
    return [Loop.of(loop, found.get(loop.id)) for loop in loops]


async def _full_id(store: Store, loop_id: str) -> str:
    """The id a prefix names (404 if none does), for the manager."""
    loop = await run_in_threadpool(store.get_loop, loop_id)
    return loop.id
