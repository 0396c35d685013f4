"""`POST/GET /api/loops/{id}/messages`: telling a loop through the server, and the answer to a
question the loop waits on."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from ralphctl.store.repository import Store
from tests.server.conftest import loop_body, wait_until

QUESTION = {"text": "Should I use PostgreSQL or SQLite for this?"}
DONE = {"text": "All done.\n<promise>COMPLETE</promise>"}


def test_a_message_is_stored_listed_and_published_as_an_event(
    client: TestClient, sqlite_store: Store, tmp_path: Path
):
    workdir = tmp_path / "work"
    workdir.mkdir()
    body = loop_body(workdir, QUESTION, DONE)
    body["config"] |= {"on_question": "wait", "question_timeout": "5m"}
    loop = client.post("/api/loops", json=body).json()
    wait_until(lambda: client.get(f"/api/loops/{loop['id']}").json()["status"] == "paused")

    sent = client.post(f"/api/loops/{loop['id'][:6]}/messages", json={"text": " SQLite. "})

    assert sent.status_code == 201, sent.text
    assert sent.json() | {"at": ""} == {
        "seq": sent.json()["seq"],
        "text": "SQLite.",
        "sender": "api",
        "at": "",
        "delivered": False,
        "iteration": None,
    }
    wait_until(lambda: client.get(f"/api/loops/{loop['id']}").json()["status"] == "completed")
    [listed] = client.get(f"/api/loops/{loop['id']}/messages").json()
    assert (listed["seq"], listed["delivered"], listed["iteration"]) == (
        sent.json()["seq"],
        True,
        2,
    )
    types = [e["event_type"] for e in client.get(f"/api/loops/{loop['id']}/events").json()]
    assert types.index("question") < types.index("message") < types.index("completed")


def test_a_completed_loop_takes_no_message(client: TestClient, tmp_path: Path):
    workdir = tmp_path / "work"
    workdir.mkdir()
    loop = client.post("/api/loops", json=loop_body(workdir, DONE)).json()
    wait_until(lambda: client.get(f"/api/loops/{loop['id']}").json()["status"] == "completed")

    refused = client.post(f"/api/loops/{loop['id']}/messages", json={"text": "More."})

    assert refused.status_code == 409
    assert "completed" in refused.json()["detail"]


def test_an_empty_message_or_an_unknown_loop_is_refused(client: TestClient):
    assert client.post("/api/loops/nope1234/messages", json={"text": "Hi"}).status_code == 404
    assert client.get("/api/loops/nope1234/messages").status_code == 404
    blank = client.post("/api/loops/nope1234/messages", json={"text": "  \n"})
    assert blank.status_code == 422


def test_a_message_needs_the_token(client: TestClient):
    anonymous = client.post(
        "/api/loops/nope1234/messages", json={"text": "Hi"}, headers={"Authorization": ""}
    )
    assert anonymous.status_code == 401
