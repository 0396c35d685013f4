"""The API says why a pending fleet loop waits, as `loops ls` does: `fleet.waiting_for` in
GET /api/loops and GET /api/loops/{id}, until a live worker with its labels beats."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, insert

from ralphctl.engine.manager import LoopManager
from ralphctl.fleet.registry import register
from ralphctl.server.app import create_app
from ralphctl.store.repository import Store
from ralphctl.store.schema import fleet_loops
from tests.store.factories import new_loop

pytestmark = pytest.mark.postgres

TOKEN = "test-token-0123456789"


def waits(api: TestClient, loop_id: str) -> tuple[str | None, str | None]:
    """What the list and the loop's own route say it waits for."""
    listed = {loop["id"]: loop["fleet"] for loop in api.get("/api/loops").json()}
    alone = api.get(f"/api/loops/{loop_id}").json()["fleet"]
    return listed[loop_id]["waiting_for"], alone["waiting_for"]


def test_a_pending_fleet_loop_says_which_worker_it_waits_for(
    postgres_url: str, fleet_engine: Engine
) -> None:
    with Store.open(postgres_url) as store:
        store.create_loop(new_loop("loop-gpu"))
        with fleet_engine.begin() as conn:
            conn.execute(
                insert(fleet_loops).values(
                    loop_id="loop-gpu", repo_url="/r.git", base_branch="main", labels=["gpu"]
                )
            )
            register(conn, "build-01", [], 2, "test")  # alive, but without gpu
        app = create_app(store, LoopManager(store), TOKEN)
        api = TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"})

        expected = "waiting for a worker with label gpu"
        assert waits(api, "loop-gpu") == (expected, expected)

        with fleet_engine.begin() as conn:
            register(conn, "gpu-01", ["gpu"], 1, "test")
        assert waits(api, "loop-gpu") == (None, None)
