"""What a held loop's job makes of the control requests it hears (``controlchannel.Inbox``,
``job.Requested``): its own loop's only, none lost before the runner is there, each as the
engine's pause and stop do it."""

from __future__ import annotations

import json

from ralphctl.domain.conditions import ExternalSignal
from ralphctl.engine.runner import Interruption, RunControl
from ralphctl.fleet.controlchannel import FleetRequest, Inbox
from ralphctl.fleet.job import Requested


def payload(loop_id: str, request: str) -> str:
    return json.dumps({"loop_id": loop_id, "request": request})


def test_a_request_heard_before_the_runner_starts_waits_for_it() -> None:
    inbox = Inbox("loop0001")
    inbox.deliver(payload("loop0001", "stop"))
    taken: list[FleetRequest] = []

    inbox.on_request(taken.append)
    inbox.deliver(payload("loop0001", "pause"))

    assert taken == [FleetRequest.STOP, FleetRequest.PAUSE]


def test_another_loops_request_and_one_not_understood_are_ignored() -> None:
    inbox = Inbox("loop0001")
    taken: list[FleetRequest] = []
    inbox.on_request(taken.append)

    for heard in (payload("loop0002", "stop"), payload("loop0001", "explode"), "[1]", "{"):
        inbox.deliver(heard)

    assert taken == []


def test_a_pause_waits_for_the_iteration_and_a_pause_now_or_stop_interrupts_it() -> None:
    paused = Requested(RunControl())
    paused.take(FleetRequest.PAUSE)
    assert paused.between_iterations() is ExternalSignal.PAUSE
    assert not paused.control.interrupt.is_set()

    for request, outcome in [
        (FleetRequest.PAUSE_NOW, Interruption.PAUSE),
        (FleetRequest.STOP, Interruption.STOP),
    ]:
        interrupted = Requested(RunControl())
        interrupted.take(request)
        assert interrupted.control.interrupt.is_set()
        assert interrupted.control.outcome is outcome
        assert interrupted.between_iterations() is None
