"""``/api/health``: whether a server answers and accepts the token (the CLI's probe)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ralphctl import __version__
from ralphctl.engine.manager import LoopManager
from ralphctl.server.schemas import HealthOut

router = APIRouter(prefix="/api", tags=["system"])


@router.get("/health")
async def health(request: Request) -> HealthOut:
    """Answers at once, from memory: the database as the loop manager last found it."""
    manager: LoopManager = request.app.state.manager
    problem = manager.store_health.problem
    return HealthOut(
        version=__version__,
        database="ok" if problem is None else "degraded",
        database_problem=problem,
    )
