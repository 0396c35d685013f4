"""The read endpoints, on SQLite and PostgreSQL, over records written straight to the store."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ralphctl.domain.states import LoopStatus
from ralphctl.server.schemas import WireMessage
from ralphctl.server.ws import wire
from ralphctl.store.repository import Store
from tests.store.factories import T0, ended_loop, finished_iteration, new_loop

DOCS = Path(__file__).parents[2] / "docs"
NOW = datetime.now(UTC)


@pytest.fixture
def api(any_client: TestClient, store: Store) -> TestClient:
    """Loop aaaa (running, 3 iterations, a checkpoint, an error) and bbbb (completed)."""
    loop = store.create_loop(
        new_loop("aaaa1111", workdir="/work/a", status=LoopStatus.RUNNING, created_at=T0)
    )
    for n in (1, 2, 3):
        done = replace(finished_iteration(loop.id, n), started_at=NOW - timedelta(minutes=9 - n))
        store.begin_iteration(done)
        loop = replace(loop, iteration=n, cost_usd=loop.cost_usd + 0.0125)
        store.complete_iteration(done, loop, [("iteration_completed", {"iteration": n})])
    store.add_checkpoint(loop.id, 2, "c0ffee" * 6 + "beef", {"iteration": 2})
    store.add_error(loop.id, 3, "agent_exit", "exit 1", {"stderr_tail": "boom"})
    ended = replace(ended_loop("bbbb2222"), workdir="/work/b", created_at=T0 + timedelta(hours=1))
    store.create_loop(ended)
    store.append_event(ended.id, "completed", {"reason": "completion"})
    return any_client


def ids(response) -> list[str]:
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()]


def test_loops_are_listed_newest_first(api):
    assert ids(api.get("/api/loops")) == ["bbbb2222", "aaaa1111"]


def test_loops_can_be_filtered_by_status(api):
    assert ids(api.get("/api/loops?status=running")) == ["aaaa1111"]
    assert ids(api.get("/api/loops?status=running&status=completed")) == ["bbbb2222", "aaaa1111"]


def test_loops_can_be_filtered_by_work_dir(api):
    assert ids(api.get("/api/loops", params={"workdir": "/work/b/"})) == ["bbbb2222"]


def test_an_unknown_status_is_a_422_naming_the_allowed_ones(api):
    response = api.get("/api/loops?status=sleeping")

    assert response.status_code == 422
    assert response.json()["detail"].startswith("status.0: Input should be 'pending', 'running'")


def test_a_loop_reads_with_its_budgets_and_totals(api):
    loop = api.get("/api/loops/aaaa1111").json()

    assert loop["status"] == "running"
    assert (loop["iteration"], loop["max_iterations"], loop["max_cost_usd"]) == (3, 10, None)
    assert loop["cost_usd"] == pytest.approx(0.0375)
    assert loop["created_at"] == "2026-03-01T12:00:00.123456Z"


def test_a_unique_prefix_names_a_loop(api):
    assert api.get("/api/loops/aaaa").json()["id"] == "aaaa1111"


@pytest.mark.parametrize(
    ("path", "detail"),
    [
        ("/api/loops/zzzz9999", "no loop with id 'zzzz9999'"),
        ("/api/loops/zz", "no loop with id 'zz' (a prefix needs at least 4 characters)"),
        ("/api/loops/zzzz9999/iterations", "no loop with id 'zzzz9999'"),
        ("/api/loops/zzzz9999/checkpoints", "no loop with id 'zzzz9999'"),
        ("/api/loops/zzzz9999/errors", "no loop with id 'zzzz9999'"),
        ("/api/loops/zzzz9999/events", "no loop with id 'zzzz9999'"),
        ("/api/events?loop_id=zzzz9999", "no loop with id 'zzzz9999'"),
    ],
)
def test_an_unknown_loop_is_a_404(api, path, detail):
    response = api.get(path)

    assert (response.status_code, response.json()) == (404, {"detail": detail})


def test_iterations_read_in_order(api):
    iterations = api.get("/api/loops/aaaa1111/iterations").json()

    assert [(it["n"], it["status"], it["cost_usd"]) for it in iterations] == [
        (1, "ok", 0.0125),
        (2, "ok", 0.0125),
        (3, "ok", 0.0125),
    ]
    assert iterations[0]["output_summary"] == "iteration 1: edited two files"


def test_checkpoints_and_errors_read_back(api):
    (checkpoint,) = api.get("/api/loops/aaaa1111/checkpoints").json()
    (error,) = api.get("/api/loops/aaaa1111/errors").json()

    assert (checkpoint["iteration"], checkpoint["commit_sha"][:6]) == (2, "c0ffee")
    assert (error["iteration"], error["error_type"], error["message"]) == (
        3,
        "agent_exit",
        "exit 1",
    )


def test_events_after_a_seq_page_through_every_loop_in_order(api):
    everything = api.get("/api/events").json()
    first, rest = everything[:2], everything[2:]

    assert [e["event_type"] for e in everything] == ["iteration_completed"] * 3 + ["completed"]
    assert api.get("/api/events?limit=2").json() == first
    assert api.get(f"/api/events?since={first[-1]['seq']}").json() == rest


def test_events_can_follow_one_loop(api):
    followed = api.get("/api/events?loop_id=bbbb").json()

    assert [(e["loop_id"], e["event_type"]) for e in followed] == [("bbbb2222", "completed")]
    assert api.get("/api/loops/bbbb/events").json() == followed


def test_a_negative_since_is_a_422(api):
    response = api.get("/api/events?since=-1")

    assert response.status_code == 422
    assert response.json()["detail"] == "since: Input should be greater than or equal to 0"


def test_stats_say_which_totals_are_for_active_loops_and_which_are_all_time(api):
    stats = api.get("/api/stats").json()

    assert stats["active"] == {
        "loops": 1,
        "pending": 0,
        "running": 1,
        "paused": 0,
        "rate_limited": 0,
        "cost_usd": 0.0375,
        "iterations": 3,
        "tokens": 0,  # the fixture records no tokens on the running loop
    }
    assert stats["all_time"] == {
        "loops": 2,
        "cost_usd": 0.4592,  # 0.0375 + 0.4217, rounded to a millionth as every cost
        "iterations": 3,
        "tokens": 12_000 + 3_400,
    }


def test_stats_keep_their_older_flat_fields_for_existing_clients(api):
    stats = api.get("/api/stats").json()

    assert {key: value for key, value in stats.items() if key.startswith(("total", "r", "p"))} == {
        "total_active": 1,
        "running": 1,
        "paused": 0,
        "total_cost": 0.4592,
        "total_iterations": 3,
        "total_tokens": 12_000 + 3_400,
    }


def test_cost_per_loop_sums_iterations(api):
    rows = api.get("/api/metrics/cost-per-loop").json()

    assert [(r["loop_id"], r["iterations"], round(r["cost_usd"], 4)) for r in rows] == [
        ("aaaa1111", 3, 0.0375),
        ("bbbb2222", 0, 0.0),
    ]


def test_average_iterations_to_completion(api):
    assert api.get("/api/metrics/iterations-to-completion").json() == {
        "completed_loops": 1,
        "average_iterations": 3.0,
    }


def test_cost_by_hour_covers_the_recent_hours(api):
    rows = api.get("/api/metrics/cost-by-hour?hours=2").json()

    assert sum(r["iterations"] for r in rows) == 3
    assert sum(r["cost_usd"] for r in rows) == pytest.approx(0.0375)
    assert all(r["hour"].endswith(":00:00Z") for r in rows)


def test_cost_by_hour_rejects_a_range_beyond_90_days(api):
    assert api.get("/api/metrics/cost-by-hour?hours=5000").status_code == 422


def test_prometheus_exposition_counts_loops_iterations_and_cost(api):
    response = api.get("/metrics")
    lines = response.text.splitlines()

    assert response.headers["content-type"].startswith("text/plain")
    assert 'ralphctl_loops{status="running"} 1.0' in lines
    assert 'ralphctl_loops{status="completed"} 1.0' in lines
    assert 'ralphctl_iterations_total{status="ok"} 3.0' in lines
    assert 'ralphctl_tokens_total{kind="input"} 12000.0' in lines
    assert "ralphctl_websocket_clients 0.0" in lines
    assert any(line.startswith("ralphctl_cost_usd_total 0.459") for line in lines)


def test_the_published_event_schema_is_the_one_in_docs(api):
    served = api.get("/api/schema/events.json").json()

    assert served == json.loads((DOCS / "events.schema.json").read_text()), (
        "docs/events.schema.json is stale: rewrite it with the output of"
        " ralphctl.server.schemas.events_json_schema() (json.dumps(..., indent=2))"
    )


def test_a_wire_event_matches_the_schema(api, store):
    event = store.events_since(0, limit=1)[0]

    parsed = WireMessage.validate_json(wire(event))

    assert (parsed.seq, parsed.event_type, parsed.data) == (event.seq, event.event_type, event.data)


def test_openapi_describes_every_route(api):
    paths = api.get("/openapi.json").json()["paths"]

    assert {"/api/loops", "/api/loops/{loop_id}/pause", "/api/events", "/metrics"} <= set(paths)
