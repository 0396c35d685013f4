"""The CLI's stdlib client finds the running server and reports its answers."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from ralphctl.engine.manager import LoopManager
from ralphctl.server.app import create_app
from ralphctl.server.auth import load_or_create_token
from ralphctl.server.client import ApiError, Client, ServerUnavailable
from ralphctl.server.locate import Address, read_address, remove_address, server_dir, write_address
from tests.server.conftest import DONE, loop_body, wait_until
from tests.server.live import serving


@pytest.fixture
def running(sqlite_store) -> Iterator[str]:
    """A live server whose address and token are where ``ralphctl serve`` leaves them."""
    token = load_or_create_token(server_dir())
    with serving(create_app(sqlite_store, LoopManager(sqlite_store), token)) as url:
        write_address(server_dir(), Address(url, os.getpid()))
        yield url


def test_no_server_has_run(tmp_path):
    assert Client.discover() is None


def test_a_server_that_is_gone_is_not_found(running):
    write_address(server_dir(), Address("http://127.0.0.1:9", os.getpid()))

    assert Client.discover() is None


def test_the_running_server_is_found_and_answers(running, new_workdir):
    client = Client.discover()
    assert client is not None

    loop = client.post("/api/loops", loop_body(new_workdir(), DONE))
    wait_until(lambda: client.get(f"/api/loops/{loop['id']}")["status"] == "completed")

    assert [it["n"] for it in client.get(f"/api/loops/{loop['id']}/iterations")] == [1]
    assert [found["id"] for found in client.get("/api/loops", status=["completed"])] == [loop["id"]]


def test_an_error_answer_carries_the_servers_detail(running):
    client = Client.discover()
    assert client is not None

    with pytest.raises(ApiError) as error:
        client.post("/api/loops/nope1234/pause", now=True)

    assert (error.value.status, error.value.detail) == (404, "no loop with id 'nope1234'")


def test_a_wrong_token_is_an_api_error_not_a_missing_server(running):
    with pytest.raises(ApiError) as error:
        Client(running, "wrong").get("/api/health")

    assert error.value.status == 401


def test_a_dead_address_is_unavailable():
    with pytest.raises(ServerUnavailable, match=r"no server at http://127\.0\.0\.1:9 "):
        Client("http://127.0.0.1:9", "t").get("/api/health")


def test_the_address_file_is_removed_only_by_its_own_server():
    write_address(server_dir(), Address("http://127.0.0.1:8765", 4242))

    remove_address(server_dir(), 1)
    assert read_address(server_dir()) == Address("http://127.0.0.1:8765", 4242)
    remove_address(server_dir(), 4242)
    assert read_address(server_dir()) is None
