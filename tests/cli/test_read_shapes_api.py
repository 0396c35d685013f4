"""Every GET route of the API, and every call the dashboard makes, on every loop shape
(tests/cli/loop_shapes.py): no 500, every JSON body parses, costs carry no float noise.

The routes are read from the app's OpenAPI document, so a new route is covered as soon as
it exists. Fleet loops (PostgreSQL) are walked too, and listed with where they work.
The manager is not started: its start-up reconciliation would change the shapes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ralphctl.engine.manager import LoopManager
from ralphctl.server.app import create_app
from ralphctl.server.schemas import WireMessage
from tests.cli.conftest import Shaped
from tests.cli.loop_shapes import FLEET_SHAPES, FLOAT_NOISE, SHAPES

TOKEN = "test-token-0123456789"
STATIC_JS = Path(__file__).parents[2] / "src" / "ralphctl" / "server" / "static" / "js"
#: ``api("/path", …)`` in the dashboard's scripts; a call that names a method is not a GET.
DASHBOARD_CALL = re.compile(r"""\bapi\(\s*(`[^`]*`|"[^"]*")(\s*,\s*\{\s*method)?""")


@pytest.fixture(scope="module")
def api(shaped: Shaped) -> TestClient:
    app = create_app(shaped.store, LoopManager(shaped.store), TOKEN)
    return TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"})


def get_routes(client: TestClient) -> list[str]:
    """The path of every GET route the app declares, e.g. ``/api/loops/{loop_id}``."""
    paths = client.get("/openapi.json").json()["paths"]
    routes = [path for path, operations in paths.items() if "get" in operations]
    assert "/api/loops/{loop_id}" in routes
    return routes


def matches(route: str, url: str) -> bool:
    pattern = re.sub(r"\\{\w+\\}", "[^/]+", re.escape(route))
    return re.fullmatch(pattern, url) is not None


def fill(path: str, loop_id: str) -> str:
    """The route's path with its parameters filled; a new parameter must be taught here."""
    values = {"loop_id": loop_id, "n": "1"}
    names = re.findall(r"{(\w+)(?::\w+)?}", path)
    unknown = [name for name in names if name not in values]
    assert not unknown, f"{path}: teach this test a value for {unknown}"
    return re.sub(r"{(\w+)(?::\w+)?}", lambda m: values[m.group(1)], path)


def check(client: TestClient, url: str) -> None:
    response = client.get(url)
    per_iteration = re.search(r"/iterations/\d+/", url) is not None
    assert response.status_code == 200 or (per_iteration and response.status_code == 404), (
        f"GET {url}: {response.status_code} {response.text[:500]}"
    )
    if response.headers.get("content-type", "").startswith("application/json"):
        assert not FLOAT_NOISE.search(response.text), f"GET {url}: {response.text[:500]}"
        response.json()


@pytest.mark.parametrize("shape", [shape.name for shape in SHAPES])
def test_every_get_route_answers_on_every_shape(api: TestClient, shaped: Shaped, shape: str):
    loop_id = shaped.ids[shape]
    for route in get_routes(api):
        if "{" in route:
            check(api, fill(route, loop_id))


def test_every_get_route_without_a_loop_answers(api: TestClient) -> None:
    for route in get_routes(api):
        if "{" not in route:
            check(api, route)


def test_the_loops_can_be_listed_by_every_status(api: TestClient) -> None:
    for status in ("pending", "running", "paused", "rate_limited", "completed", "stopped"):
        check(api, f"/api/loops?status={status}")


def test_every_call_the_dashboard_makes_is_a_get_route_walked_here(api: TestClient) -> None:
    calls = []
    for script in STATIC_JS.glob("*.js"):
        for match in DASHBOARD_CALL.finditer(script.read_text()):
            if match.group(2) is None:
                calls.append(re.sub(r"\$\{[^}]*\}", "x", match.group(1)[1:-1]).split("?")[0])
    assert "/api/stats" in calls
    routes = get_routes(api)
    for call in calls:
        assert any(matches(route, call) for route in routes), f"the dashboard calls {call}"


def test_the_websocket_snapshot_holds_every_shape(api: TestClient, shaped: Shaped) -> None:
    with api.websocket_connect(f"/ws/events?token={TOKEN}") as socket:
        snapshot = WireMessage.validate_json(socket.receive_text())
    loops = snapshot.data.loops  # type: ignore[union-attr]
    assert {loop.id for loop in loops} == set(shaped.ids.values())


def test_events_replayed_on_the_websocket_carry_costs_without_float_noise(
    api: TestClient, shaped: Shaped
) -> None:
    stored = shaped.store.events_since(0, limit=10_000)
    assert any(FLOAT_NOISE.search(repr(event.data)) for event in stored)  # as written
    with api.websocket_connect(f"/ws/events?token={TOKEN}&since=0") as socket:
        messages = [socket.receive_text() for _ in range(len(stored) + 1)]  # snapshot first
    assert not [message for message in messages if FLOAT_NOISE.search(message)]


@pytest.fixture(scope="module")
def fleet_api(fleet_shaped: Shaped) -> TestClient:
    app = create_app(fleet_shaped.store, LoopManager(fleet_shaped.store), TOKEN)
    return TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"})


@pytest.mark.postgres
@pytest.mark.parametrize("shape", [shape.name for shape in FLEET_SHAPES])
def test_every_get_route_answers_on_every_fleet_shape(
    fleet_api: TestClient, fleet_shaped: Shaped, shape: str
) -> None:
    loop_id = fleet_shaped.ids[shape]
    for route in get_routes(fleet_api):
        check(fleet_api, fill(route, loop_id) if "{" in route else route)


@pytest.mark.postgres
def test_fleet_loops_are_listed_with_their_worker_repository_and_branch(
    fleet_api: TestClient, fleet_shaped: Shaped
) -> None:
    listed = {loop["id"]: loop["fleet"] for loop in fleet_api.get("/api/loops").json()}
    running = fleet_shaped.ids["fleet running on a worker"]

    assert {loop_id: listed[loop_id]["worker"] for loop_id in fleet_shaped.ids.values()} == {
        fleet_shaped.ids["fleet pending"]: None,
        running: "build-01",
        fleet_shaped.ids["fleet completed"]: None,
    }
    assert listed[running] == fleet_api.get(f"/api/loops/{running}").json()["fleet"]
    assert listed[running] | {"worker": None} == {
        "repo": "git@example.invalid:team/[app].git",
        "branch": "main",
        "loop_branch": f"ralph/{running}",
        "labels": ["gpu"],
        "worker": None,
        "waiting_for": None,  # it runs
    }
    with fleet_api.websocket_connect(f"/ws/events?token={TOKEN}") as socket:
        snapshot = WireMessage.validate_json(socket.receive_text())
    in_snapshot = {loop.id: loop for loop in snapshot.data.loops}  # type: ignore[union-attr]
    held = in_snapshot[running].fleet
    assert held is not None
    assert held.worker == "build-01"
