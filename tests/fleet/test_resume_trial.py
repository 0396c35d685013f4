"""Resuming a fleet loop that its circuit breaker failed gives it the single trial iteration a
loop resumed on one machine gets: the breaker is half open when a worker takes the loop."""

from __future__ import annotations

import pytest

from ralphctl.domain.breaker import BreakerState, BreakerStatus, from_dict, to_dict
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.fleet.control import mark_resumed
from ralphctl.store.repository import Store
from tests.store.factories import new_loop

pytestmark = pytest.mark.postgres


def test_a_loop_failed_on_its_breaker_is_resumed_for_one_trial(
    postgres_url: str, fleet_engine: object
) -> None:
    tripped = BreakerState(status=BreakerStatus.OPEN, reason="3 errors in a row", trips=1)
    with Store.open(postgres_url) as store:
        store.create_loop(
            new_loop(
                "loop-trip",
                status=LoopStatus.FAILED,
                stop_reason=StopReason.CIRCUIT_BREAKER,
                breaker_state=to_dict(tripped),
                config=LoopConfig().to_json(),
            )
        )
        controlled, _labels = mark_resumed(store, "loop-trip")
        stored = store.get_loop("loop-trip")

    assert controlled.loop.status is LoopStatus.RUNNING
    breaker = from_dict(stored.breaker_state or {})
    assert breaker.status is BreakerStatus.HALF_OPEN  # the worker's runner lets one through
    assert breaker.trips == 1
