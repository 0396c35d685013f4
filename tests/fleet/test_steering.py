"""Steering a fleet loop from another machine: `ralphctl tell --db` and the API's messages
reach the next iteration's prompt on the worker that holds the loop (a worker process, the
scripted agent saving each prompt it is given)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ralphctl.engine.manager import LoopManager
from ralphctl.server.app import create_app
from ralphctl.store.repository import Store
from tests.fleet.test_worker_e2e import DONE, STEP, Fleet, fleet, running_iteration, wait_until

__all__ = ["fleet"]  # the fixture, shared with the end-to-end tests

pytestmark = pytest.mark.postgres

TOKEN = "test-token-0123456789"
SEPARATOR = "\x1e\n"  # the scripted agent's record separator after each prompt


def prompts(path: Path) -> list[str]:
    return [prompt for prompt in path.read_text().split(SEPARATOR) if prompt]


def test_tell_and_an_api_message_reach_the_next_prompt_on_the_worker(fleet: Fleet) -> None:
    saved = fleet.root / "prompts.txt"
    slow = {**STEP, "sleep_s": 3, "save_prompt": str(saved)}
    loop_id = fleet.start_loop(slow, slow, {**DONE, "save_prompt": str(saved)})
    fleet.start_worker("build-01", concurrency=1)

    wait_until(lambda: running_iteration(fleet.url, loop_id) == 1, fleet)
    fleet.ralphctl("tell", loop_id, "Use the blue paint.")  # the CLI of another machine
    wait_until(lambda: running_iteration(fleet.url, loop_id) == 2, fleet)
    with Store.open(fleet.url) as store:  # a server on another machine
        api = TestClient(create_app(store, LoopManager(store), TOKEN))
        told = api.post(
            f"/api/loops/{loop_id}/messages",
            json={"text": "Then sign it."},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert told.status_code == 201, told.text
    wait_until(lambda: len(prompts(saved)) == 3, fleet)

    first, second, third = prompts(saved)
    assert "blue paint" not in first
    assert "blue paint" in second
    assert "sign it" not in second
    assert "Then sign it." in third
    assert "blue paint" not in third
