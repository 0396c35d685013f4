"""Starting and controlling loops through the API, with the scripted agent (real processes)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.server.conftest import DONE, loop_body, wait_until

WORKING = {"text": "working", "cost_usd": 0.02, "tokens": {"input": 100, "output": 20}}
SLOW = {"text": "working slowly", "sleep_s": 30, "cost_usd": 0.5}


def status_of(client: TestClient, loop_id: str) -> str:
    status: str = client.get(f"/api/loops/{loop_id}").json()["status"]
    return status


def start(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/api/loops", json=body)
    assert response.status_code == 201, response.text
    loop: dict[str, Any] = response.json()
    return loop


def test_a_loop_started_through_the_api_runs_to_completion(client, new_workdir):
    loop = start(client, loop_body(new_workdir(), WORKING, WORKING, DONE, name="three steps"))

    assert (loop["name"], loop["agent"], loop["status"]) == ("three steps", "scripted", "running")
    wait_until(lambda: status_of(client, loop["id"]) == "completed", "the loop to complete")
    iterations = client.get(f"/api/loops/{loop['id']}/iterations").json()
    assert [(it["n"], it["status"]) for it in iterations] == [(1, "ok"), (2, "ok"), (3, "ok")]


def test_budgets_in_the_body_become_the_loops_config(client, new_workdir):
    body = loop_body(new_workdir(), DONE, max_iterations=7, max_cost_usd=2.5, max_runtime="90m")

    loop = start(client, body)

    assert (loop["max_iterations"], loop["max_cost_usd"]) == (7, 2.5)
    assert loop["config"]["max_runtime"] == 5400.0


def test_the_work_dirs_ralphctl_toml_supplies_what_the_body_leaves_out(client, new_workdir):
    workdir = new_workdir()
    (workdir / "ralphctl.toml").write_text("[loops.defaults]\nmax_iterations = 4\n")

    assert start(client, loop_body(workdir, DONE))["max_iterations"] == 4


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        ({"task": "   "}, "task: must not be blank"),
        ({"workdir": "relative/dir"}, "workdir: must be an absolute path, not 'relative/dir'"),
        ({"workdir": "/no/such/dir"}, "workdir: /no/such/dir is not an existing directory"),
        ({"max_cost": 3}, "max_cost: Extra inputs are not permitted"),
        ({"max_iterations": 0}, "max_iterations: Input should be greater than or equal to 1"),
        ({"max_cost_usd": "lots"}, "max_cost_usd: Input should be a valid number"),
        ({"mode": "dreamy"}, "mode: Input should be 'fresh' or 'hook'"),
        ({"config": {"bogus": 1}}, "bogus (from flag): unknown setting"),
        ({"config": {"cooldown": "soon"}}, "cooldown (from flag): 'soon' is not a duration"),
        ({"agent": "nope"}, "unknown agent 'nope'"),
        ({"mode": "hook"}, "which the scripted agent cannot do; agents that can: claude"),
        (
            {"mode": "hook", "agent": "claude", "script": None},
            "cooldown, checkpoint_interval: not available in hook mode",
        ),
        ({"workflow": "no-such-workflow"}, "no-such-workflow"),
    ],
)
def test_a_bad_body_is_a_422_that_says_what_is_wrong(client, new_workdir, change, detail):
    response = client.post("/api/loops", json=loop_body(new_workdir(), DONE) | change)

    assert response.status_code == 422
    assert detail in response.json()["detail"]


def test_missing_fields_are_named(client):
    response = client.post("/api/loops", json={})

    assert response.status_code == 422
    assert response.json()["detail"] == "task: Field required; workdir: Field required"


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b""])
def test_a_body_that_is_not_a_json_object_is_a_422(client, content):
    response = client.post(
        "/api/loops", content=content, headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 422


def test_pause_takes_effect_after_the_running_iteration_and_resume_continues(client, new_workdir):
    loop = start(client, loop_body(new_workdir(), {**WORKING, "sleep_s": 0.5}, max_iterations=50))

    paused = client.post(f"/api/loops/{loop['id']}/pause")

    assert paused.status_code == 200
    wait_until(lambda: status_of(client, loop["id"]) == "paused", "the loop to pause")
    iterations = len(client.get(f"/api/loops/{loop['id']}/iterations").json())
    resumed = client.post(f"/api/loops/{loop['id']}/resume").json()
    assert resumed["status"] == "running"
    assert resumed["iteration"] == iterations
    wait_until(
        lambda: client.get(f"/api/loops/{loop['id']}").json()["iteration"] > iterations,
        "an iteration after the resume",
    )


def test_pause_now_interrupts_the_running_iteration(client, new_workdir):
    loop = start(client, loop_body(new_workdir(), SLOW))

    paused = client.post(f"/api/loops/{loop['id']}/pause?now=true").json()

    assert paused["status"] == "paused"
    iterations = client.get(f"/api/loops/{loop['id']}/iterations").json()
    assert [(it["n"], it["status"]) for it in iterations] == [(1, "interrupted")]


def test_stop_ends_a_running_loop(client, new_workdir):
    loop = start(client, loop_body(new_workdir(), SLOW))

    stopped = client.post(f"/api/loops/{loop['id'][:6]}/stop").json()

    assert (stopped["status"], stopped["stop_reason"]) == ("stopped", "user_stop")


def test_an_illegal_transition_is_a_409_saying_what_is_allowed(client, new_workdir):
    loop = start(client, loop_body(new_workdir(), DONE))
    wait_until(lambda: status_of(client, loop["id"]) == "completed", "the loop to complete")

    response = client.post(f"/api/loops/{loop['id']}/resume")

    assert response.status_code == 409
    assert response.json()["detail"] == (
        "cannot go from completed to running; allowed from completed: none (it has ended)"
    )


def test_pausing_a_paused_loop_is_a_409(client, new_workdir):
    loop = start(client, loop_body(new_workdir(), SLOW))
    client.post(f"/api/loops/{loop['id']}/pause?now=true")

    response = client.post(f"/api/loops/{loop['id']}/pause")

    assert response.status_code == 409
    assert response.json()["detail"].startswith("cannot go from paused to paused")


def test_a_stopped_hook_mode_loop_cannot_be_resumed_409(client, new_workdir, fake_claude):
    fake_claude([{"text": "one", "sleep_s": 60}])
    body = {"task": "Write the notes.", "workdir": str(new_workdir()), "mode": "hook"}
    loop = start(client, body)

    paused = client.post(f"/api/loops/{loop['id']}/pause")
    stopped = client.post(f"/api/loops/{loop['id']}/stop").json()
    resumed = client.post(f"/api/loops/{loop['id']}/resume")

    assert (loop["mode"], loop["agent"], loop["status"]) == ("hook", "claude", "running")
    assert paused.status_code == 200  # honoured at the session's next Stop
    assert (stopped["status"], stopped["stop_reason"]) == ("stopped", "user_stop")
    assert resumed.status_code == 409
    assert "cannot be entered again" in resumed.json()["detail"]


def test_a_second_loop_in_a_busy_work_dir_is_a_409(client, new_workdir):
    workdir = new_workdir()
    first = start(client, loop_body(workdir, SLOW))

    response = client.post("/api/loops", json=loop_body(workdir, SLOW))

    assert response.status_code == 409
    assert f"loop {first['id']} (running) already works in" in response.json()["detail"]


def test_beyond_max_concurrent_a_loop_queues_or_is_a_429(client, new_workdir):
    for _ in range(2):  # the fixture's manager runs two at once
        start(client, loop_body(new_workdir(), SLOW))

    refused = client.post("/api/loops", json=loop_body(new_workdir(), SLOW, queue=False))
    queued = client.post("/api/loops", json=loop_body(new_workdir(), SLOW))

    assert refused.status_code == 429
    assert "max_concurrent = 2" in refused.json()["detail"]
    assert (queued.status_code, queued.json()["status"]) == (201, "pending")


def test_control_of_an_unknown_loop_is_a_404(client):
    for action in ("pause", "resume", "stop"):
        assert client.post(f"/api/loops/nope1234/{action}").status_code == 404
