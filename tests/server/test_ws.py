"""/ws/events: a snapshot, then every event once, in seq order, across reconnections."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from starlette.testclient import WebSocketTestSession
from starlette.websockets import WebSocketDisconnect

from ralphctl.engine.bus import EventBus
from ralphctl.server import ws
from ralphctl.server.ws import EventStream
from ralphctl.store.errors import StoreError
from tests.server.conftest import AUTH, DONE, loop_body, wait_until
from tests.store.factories import new_loop

STEP = {"text": "working", "sleep_s": 0.2, "cost_usd": 0.01}
SLOW = {"text": "working slowly", "sleep_s": 30, "cost_usd": 0.5}


def events_until(socket: WebSocketTestSession, event_type: str) -> list[dict[str, Any]]:
    """Messages received up to and including the first ``event_type`` event."""
    received: list[dict[str, Any]] = []
    while not received or received[-1]["event_type"] != event_type:
        received.append(socket.receive_json())
    return received


def seqs(events: list[dict[str, Any]]) -> list[int]:
    return [event["seq"] for event in events]


def test_the_first_message_is_a_snapshot_of_every_loop(client, new_workdir):
    loop = client.post("/api/loops", json=loop_body(new_workdir(), SLOW)).json()
    # Once its first iteration has started, the slow loop is quiet for 30 s.
    wait_until(
        lambda: client.get("/api/events").json()[-1]["event_type"] == "iteration_started",
        "the first iteration to start",
    )

    with client.websocket_connect("/ws/events", headers=AUTH) as socket:
        snapshot = socket.receive_json()

    assert (snapshot["event_type"], snapshot["seq"], snapshot["loop_id"]) == (
        "snapshot",
        None,
        None,
    )
    assert [(s["id"], s["status"]) for s in snapshot["data"]["loops"]] == [(loop["id"], "running")]
    assert snapshot["data"]["last_seq"] == client.get("/api/events").json()[-1]["seq"]


def test_events_arrive_live_in_seq_order_in_the_wire_form(client, new_workdir):
    with client.websocket_connect("/ws/events", headers=AUTH) as socket:
        socket.receive_json()
        loop = client.post("/api/loops", json=loop_body(new_workdir(), STEP, DONE)).json()
        events = events_until(socket, "completed")

    assert set(events[0]) == {"event_type", "loop_id", "seq", "data", "timestamp"}
    assert {event["loop_id"] for event in events} == {loop["id"]}
    assert seqs(events) == sorted(set(seqs(events)))
    assert events == client.get(f"/api/events?since={events[0]['seq'] - 1}").json()


def test_a_client_resuming_with_since_misses_nothing_and_sees_nothing_twice(client, new_workdir):
    body = loop_body(new_workdir(), STEP, STEP, STEP, STEP, STEP, DONE)
    with client.websocket_connect("/ws/events?since=0", headers=AUTH) as socket:
        socket.receive_json()
        loop = client.post("/api/loops", json=body).json()
        first = [socket.receive_json() for _ in range(5)]
    # Disconnected while the loop goes on; then back, from the last seq handled.
    with client.websocket_connect(f"/ws/events?since={first[-1]['seq']}", headers=AUTH) as socket:
        assert socket.receive_json()["event_type"] == "snapshot"
        rest = events_until(socket, "completed")

    stored = client.get(f"/api/loops/{loop['id']}/events").json()
    assert seqs(first + rest) == seqs(stored)
    assert first + rest == stored


def test_a_stream_can_follow_one_loop(client, new_workdir):
    other = client.post("/api/loops", json=loop_body(new_workdir(), SLOW)).json()
    followed = client.post("/api/loops", json=loop_body(new_workdir(), STEP, DONE)).json()

    with client.websocket_connect(
        f"/ws/events?since=0&loop_id={followed['id'][:6]}", headers=AUTH
    ) as socket:
        snapshot = socket.receive_json()
        events = events_until(socket, "completed")

    assert [loop["id"] for loop in snapshot["data"]["loops"]] == [followed["id"]]
    assert {event["loop_id"] for event in events} == {followed["id"]}
    assert other["id"] not in json.dumps(events)


def test_following_an_unknown_loop_is_refused(client):
    with (
        pytest.raises(WebSocketDisconnect) as refused,
        client.websocket_connect("/ws/events?loop_id=nope1234", headers=AUTH),
    ):
        pass

    assert refused.value.code == 1008


def test_a_bad_since_is_refused(client):
    with (
        pytest.raises(WebSocketDisconnect) as refused,
        client.websocket_connect("/ws/events?since=-5", headers=AUTH),
    ):
        pass

    assert refused.value.code == 1008


def test_a_client_too_slow_for_its_queue_is_dropped_and_resumes_from_the_store(
    client, new_workdir, monkeypatch
):
    loop = client.post("/api/loops", json=loop_body(new_workdir(), SLOW)).json()
    client.post(f"/api/loops/{loop['id']}/pause?now=true")
    monkeypatch.setattr(ws, "QUEUE_SIZE", 1)

    with client.websocket_connect("/ws/events", headers=AUTH) as socket:
        last_seq = socket.receive_json()["data"]["last_seq"]
        client.post(f"/api/loops/{loop['id']}/stop")  # two events at once: one too many
        with pytest.raises(WebSocketDisconnect) as dropped:
            socket.receive_json()

    assert dropped.value.code == 1013
    assert dropped.value.reason == f"too slow: reconnect with since={last_seq}"
    assert "ralphctl_websocket_dropped_total 1.0" in client.get("/metrics").text
    with client.websocket_connect(f"/ws/events?since={last_seq}", headers=AUTH) as socket:
        socket.receive_json()
        missed = events_until(socket, "stopped")
    assert [event["event_type"] for event in missed] == ["state_changed", "stopped"]


def test_connected_clients_are_counted(client):
    with client.websocket_connect("/ws/events", headers=AUTH) as socket:
        socket.receive_json()
        assert "ralphctl_websocket_clients 1.0" in client.get("/metrics").text

    wait_until(lambda: "ralphctl_websocket_clients 0.0" in client.get("/metrics").text)


class Outbox:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.closed: int | None = None

    async def send_text(self, data: str) -> None:
        self.sent.append(json.loads(data))

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        self.closed = code


def test_replay_and_live_overlap_without_loss_or_repeat(sqlite_store):
    """Events 2-3 are in the store, 3 also queued live; 4 comes live only."""
    store, bus = sqlite_store, EventBus()
    store.create_loop(new_loop("loop-1"))
    one, two = store.append_event("loop-1", "tick", {}), store.append_event("loop-1", "tick", {})
    subscription = bus.subscribe(max_queue=10)
    three = store.append_event("loop-1", "tick", {})
    bus.publish(three)
    outbox = Outbox()
    stream = EventStream(outbox, store, subscription, None)

    async def scenario() -> None:
        sending = asyncio.create_task(stream.send_all(since=one.seq))
        while len(outbox.sent) < 3:
            await asyncio.sleep(0.01)
        bus.publish(store.append_event("loop-1", "tick", {}))
        while len(outbox.sent) < 4:
            await asyncio.sleep(0.01)
        subscription.close()
        await asyncio.wait_for(sending, 30)

    asyncio.run(scenario())

    assert [m["seq"] for m in outbox.sent[1:]] == [two.seq, three.seq, three.seq + 1]
    assert outbox.closed == 1001


def test_a_database_failure_ends_the_stream_with_1011_and_the_seq_to_resume_from(
    client, sqlite_store, monkeypatch
):
    def failing(*_args: object, **_kwargs: object) -> None:
        raise StoreError("cannot read events: disk I/O error")

    monkeypatch.setattr(sqlite_store, "events_since", failing)  # the replay fails
    with client.websocket_connect("/ws/events?since=0", headers=AUTH) as socket:
        assert socket.receive_json()["event_type"] == "snapshot"
        with pytest.raises(WebSocketDisconnect) as ended:
            socket.receive_json()

    assert (ended.value.code, ended.value.reason) == (
        1011,
        "the database failed: reconnect with since=0",
    )
