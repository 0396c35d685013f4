"""``/api/stats`` and ``/api/metrics/…``: the manager's counters and the seed's three queries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Query

from ralphctl.server.api.deps import ManagerDep, StoreDep
from ralphctl.server.schemas import CompletionOut, HourCostOut, LoopCostOut, StatsOut
from ralphctl.store import metrics

router = APIRouter(prefix="/api", tags=["metrics"])


@router.get("/stats")
def stats(manager: ManagerDep) -> StatsOut:
    """The loops active now (by status) and what they have spent so far (``active``); every
    loop the store holds, ended or not (``all_time``). The flat fields are the older names
    of some of these, kept for existing clients."""
    return StatsOut.of(manager.stats())


@router.get("/metrics/cost-per-loop")
def cost_per_loop(
    store: StoreDep, limit: Annotated[int, Query(ge=1, le=10_000)] = 100
) -> list[LoopCostOut]:
    """Each loop's cost summed over its iterations, most expensive first."""
    return [LoopCostOut.model_validate(row) for row in metrics.cost_per_loop(store, limit)]


@router.get("/metrics/iterations-to-completion")
def iterations_to_completion(store: StoreDep) -> CompletionOut:
    """The average number of iterations of the loops that completed."""
    return CompletionOut.model_validate(metrics.iterations_to_completion(store))


@router.get("/metrics/cost-by-hour")
def cost_by_hour(
    store: StoreDep,
    hours: Annotated[int, Query(ge=1, le=24 * 90, description="How far back to look.")] = 24,
) -> list[HourCostOut]:
    """Cost per UTC hour of the iterations started in the last ``hours`` hours, oldest first."""
    since = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(
        hours=hours - 1
    )
    return [HourCostOut.model_validate(row) for row in metrics.cost_by_hour(store, since)]
