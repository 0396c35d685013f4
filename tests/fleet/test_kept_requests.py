"""Control requests kept on the lease row (real PostgreSQL): the strongest one waits for the
holder, a renewal reads it back, and a controller that settles the loop withdraws it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import Engine

from ralphctl.fleet.controlchannel import FleetRequest, pending, send, withdraw
from ralphctl.fleet.keeper import LeaseKeeper
from ralphctl.fleet.leases import acquire

pytestmark = pytest.mark.postgres


def kept(engine: Engine, loop_id: str) -> FleetRequest | None:
    with engine.connect() as conn:
        return pending(conn, loop_id)


def ask(engine: Engine, loop_id: str, request: FleetRequest) -> None:
    with engine.begin() as conn:
        send(conn, loop_id, request)


def test_the_strongest_request_waits_until_it_is_withdrawn(
    fleet_engine: Engine, make_loop: Callable[[str], str]
) -> None:
    loop_id = make_loop("loop-k")
    with fleet_engine.begin() as conn:
        acquire(conn, loop_id, "build-01", timedelta(minutes=5))
    assert kept(fleet_engine, loop_id) is None

    ask(fleet_engine, loop_id, FleetRequest.PAUSE)
    ask(fleet_engine, loop_id, FleetRequest.STOP)
    ask(fleet_engine, loop_id, FleetRequest.PAUSE_NOW)  # weaker than the stop: not kept
    assert kept(fleet_engine, loop_id) is FleetRequest.STOP

    with fleet_engine.begin() as conn:
        withdraw(conn, loop_id)
    assert kept(fleet_engine, loop_id) is None


def test_a_renewal_hands_the_waiting_request_to_the_holder(
    fleet_engine: Engine, make_loop: Callable[[str], str]
) -> None:
    loop_id = make_loop("loop-r")
    ttl = timedelta(milliseconds=600)
    with fleet_engine.begin() as conn:
        lease = acquire(conn, loop_id, "build-01", ttl)
    assert lease is not None
    ask(fleet_engine, loop_id, FleetRequest.PAUSE)  # its notification heard by nobody
    heard: list[FleetRequest | None] = []

    async def keep() -> None:
        keeper = LeaseKeeper(fleet_engine, lease, ttl)
        keeper.on_request = heard.append
        keeper.start()
        await asyncio.sleep(0.5)  # one renewal, at a third of the time to live
        await keeper.release()

    asyncio.run(keep())
    assert FleetRequest.PAUSE in heard
