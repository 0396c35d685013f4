"""``/api/events``: every loop's events after a seq; and their published JSON Schema."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from ralphctl.server.api.deps import StoreDep
from ralphctl.server.api.params import Since
from ralphctl.server.errors import error_responses
from ralphctl.server.schemas import Event, events_json_schema

router = APIRouter(prefix="/api", tags=["events"])


@router.get("/events", responses=error_responses(404))
def list_events(
    store: StoreDep,
    since: Since = 0,
    loop_id: Annotated[str | None, Query(description="Only this loop's events.")] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> list[Event]:
    """Events after ``since`` in seq order; page by passing the last seq back as ``since``."""
    if loop_id is not None:
        loop_id = store.get_loop(loop_id).id
    return [Event.of(e) for e in store.events_since(since, loop_id=loop_id, limit=limit)]


@router.get("/schema/events.json")
def events_schema() -> dict[str, Any]:
    """The JSON Schema of the messages of ``/ws/events`` (and of each REST event)."""
    return events_json_schema()
