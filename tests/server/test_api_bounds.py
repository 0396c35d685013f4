"""Every number the API takes is bounded: a seq beyond 64 bits, a count beyond 64 bits, NaN or
an infinity is refused as invalid input (422, or 1008 on the WebSocket), never a server
error and never a budget switched off. A server shutting down answers 503, not 500."""

from __future__ import annotations

import json
import math

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from ralphctl.engine.manager import LoopManager
from ralphctl.server.api.params import MAX_INT64
from ralphctl.server.app import create_app
from tests.server.conftest import AUTH, DONE, TOKEN, loop_body

TOO_BIG = MAX_INT64 + 1


@pytest.fixture
def loop_id(client, new_workdir) -> str:
    """A loop that exists (done after one iteration), for its routes."""
    response = client.post("/api/loops", json=loop_body(new_workdir(), DONE))
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


@pytest.mark.parametrize("path", ["/api/events", "/api/loops/{id}/events"])
def test_a_since_beyond_64_bits_is_a_422_naming_the_bound(client, loop_id, path):
    response = client.get(path.format(id=loop_id), params={"since": TOO_BIG})

    assert response.status_code == 422
    assert response.json()["detail"].startswith("since: Input should be less than or equal to")


@pytest.mark.parametrize("path", ["/api/events", "/api/loops/{id}/events"])
def test_the_largest_64_bit_since_is_answered_with_no_events(client, loop_id, path):
    response = client.get(path.format(id=loop_id), params={"since": MAX_INT64})

    assert (response.status_code, response.json()) == (200, [])


def test_a_websocket_since_beyond_64_bits_is_refused_with_1008(client):
    with (
        pytest.raises(WebSocketDisconnect) as refused,
        client.websocket_connect(f"/ws/events?since={TOO_BIG}"),
    ):
        pass

    assert refused.value.code == 1008


@pytest.mark.parametrize("name", ["max_iterations", "max_tokens"])
def test_a_count_beyond_64_bits_is_a_422(client, new_workdir, name):
    body = loop_body(new_workdir(), DONE, **{name: TOO_BIG})

    response = client.post("/api/loops", json=body)

    assert response.status_code == 422
    assert response.json()["detail"].startswith(f"{name}: Input should be less than or equal")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("name", ["max_cost_usd", "max_runtime", "cooldown"])
@pytest.mark.parametrize("where", ["field", "config"])
def test_nan_and_infinities_are_a_422_naming_the_setting(client, new_workdir, where, name, value):
    body = loop_body(new_workdir(), DONE)
    if where == "field":
        body[name] = value
    else:
        body["config"] = {**body["config"], name: value}

    response = client.post(
        "/api/loops",
        content=json.dumps(body),  # NaN, Infinity: not JSON, yet Python's parser takes them
        headers={"Content-Type": "application/json"},
    )

    assert response.status_code == 422, response.text
    assert name in response.json()["detail"]


def test_a_loop_started_while_the_server_shuts_down_is_a_503(sqlite_store, new_workdir, caplog):
    manager = LoopManager(sqlite_store)
    app = create_app(sqlite_store, manager, TOKEN)
    with TestClient(app):
        pass  # started, then closed: the server is shutting down
    closing = TestClient(app, headers=AUTH)  # no lifespan: the manager stays closed

    response = closing.post("/api/loops", json=loop_body(new_workdir(), DONE))

    assert (response.status_code, response.json()) == (
        503,
        {"detail": "the loop manager is shutting down"},
    )
    assert "POST /api/loops answered 503: the loop manager is shutting down" in caplog.text
