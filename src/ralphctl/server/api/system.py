"""``/api/health``: whether a server answers and accepts the token (the CLI's probe)."""

from __future__ import annotations

from fastapi import APIRouter

from ralphctl import __version__
from ralphctl.server.schemas import HealthOut

router = APIRouter(prefix="/api", tags=["system"])


@router.get("/health")
def health() -> HealthOut:
    return HealthOut(version=__version__)
