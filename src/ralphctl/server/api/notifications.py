"""``/api/notifications``: recent notifications and the outcome of each delivery."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from ralphctl.notify import outbox
from ralphctl.server.api.deps import StoreDep
from ralphctl.server.errors import error_responses
from ralphctl.server.schemas import Notification

router = APIRouter(prefix="/api", tags=["notifications"])


@router.get("/notifications", responses=error_responses(404))
def list_notifications(
    store: StoreDep,
    loop_id: Annotated[str | None, Query(description="Only this loop's.")] = None,
    status: Annotated[
        Literal["pending", "delivered", "failed", "skipped"] | None,
        Query(description="Only those with this status."),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
) -> list[Notification]:
    """The newest notifications first."""
    if loop_id is not None:
        loop_id = store.get_loop(loop_id).id
    found = outbox.recent(store, limit=limit, loop_id=loop_id, status=status)
    return [Notification.model_validate(n) for n in found]
