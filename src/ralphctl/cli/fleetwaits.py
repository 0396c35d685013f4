"""Why a pending fleet loop waits, added to its JSON for `loops ls` and `loops show`."""

from __future__ import annotations

from typing import Any

from ralphctl.domain.states import LoopStatus


def with_fleet_waits(db: str | None, loops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``loops``, each pending fleet loop that no live worker can run with ``waiting_for``
    (``waiting for a worker with label gpu``); unchanged off PostgreSQL or without the
    ``fleet`` extra."""
    if not any(loop["status"] == LoopStatus.PENDING for loop in loops):
        return loops
    from ralphctl.store.url import resolve_url

    if not resolve_url(db).startswith("postgresql"):  # fleet mode is PostgreSQL's alone
        return loops
    from ralphctl.fleet.errors import FleetError

    try:
        from ralphctl.fleet.overview import waiting_in
    except FleetError:  # no fleet extra: no fleet loops either
        return loops
    waits = waiting_in(db)
    return [
        loop | {"waiting_for": waits[loop["id"]]} if loop["id"] in waits else loop for loop in loops
    ]
