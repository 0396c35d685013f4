"""The fleet-wide limit end to end: two workers with two slots each, given a fleet limit of
one, run their loops one at a time between them, and every loop still completes."""

from __future__ import annotations

import threading

import pytest

from ralphctl.store.repository import Store
from tests.fleet.test_worker_e2e import Fleet, fleet, statuses, wait_until

pytestmark = pytest.mark.postgres

__all__ = ["fleet"]  # the fixture, shared with the end-to-end tests

SLOW = {"edits": [{"path": "NOTES.md", "append": "- a step\n"}], "sleep_s": 1.0}
DONE = {**SLOW, "text": "All done.\n<promise>COMPLETE</promise>"}


def most_running_at_once(url: str, loop_ids: list[str], stop: threading.Event) -> list[int]:
    """Samples how many of the loops run an iteration, until ``stop``; the counts seen."""
    seen = []
    with Store.open(url) as store:
        while not stop.wait(0.1):
            seen.append(sum(bool(store.running_iterations(loop_id)) for loop_id in loop_ids))
    return seen


def test_a_fleet_limit_of_one_runs_one_loop_at_a_time_across_workers(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RALPHCTL_FLEET_LIMIT", "1")  # as an EnvironmentFile gives it
    loop_ids = [fleet.start_loop(SLOW, DONE) for _ in range(3)]
    seen: list[int] = []
    stop = threading.Event()
    sampler = threading.Thread(
        target=lambda: seen.extend(most_running_at_once(fleet.url, loop_ids, stop))
    )
    sampler.start()
    fleet.start_worker("build-01", concurrency=2)
    fleet.start_worker("build-02", concurrency=2)

    try:
        wait_until(lambda: set(statuses(fleet.url, loop_ids).values()) == {"completed"}, fleet)
    finally:
        stop.set()
        sampler.join()

    assert max(seen) == 1, "never two loops at once on a fleet limited to one"
    assert "fleet limit 1" in fleet.log("build-01")
