"""The published OpenAPI description is what the server does: schemathesis checks every
operation through the app itself (examples, coverage, fuzzing and stateful phases, valid and
invalid input, with the token), and asserts no server error and no answer the description
does not allow (status, content type, body schema, headers)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import strategies as st
from schemathesis.engine import Status
from schemathesis.engine.events import EngineFinished, ScenarioFinished

from ralphctl.agents.base import AgentAdapter
from ralphctl.domain.config import LoopConfig
from ralphctl.engine.manager import LoopManager
from ralphctl.server.app import create_app
from ralphctl.store.repository import Store
from tests.reliability.figures import Figure
from tests.reliability.scale import scaled
from tests.server.conftest import AUTH, TOKEN
from tests.store.factories import ended_loop, finished_iteration, started_iteration

MAX_EXAMPLES = scaled(50, 200)  # per operation and phase
MAX_TIME_S = scaled(45, 240)  # fuzzing and stateful sequences go on, in turns, until then
SEED = 20_261_123  # the same cases every run; change it to explore others
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
    "negative_data_rejection",
    "missing_required_header",
    "ignored_auth",
    "unsupported_method",
    "non_finite_numbers_are_refused",
)
NO_AGENT = "this test runs no agent"
SEEDED = "c0ffee000001"
NON_FINITE = (math.nan, math.inf, -math.inf)
#: Where a loop body takes a number: its budget fields, and any setting through ``config``.
NUMBERS = ("max_cost_usd", "max_runtime", "cooldown", "max_tokens", "max_iterations")


def no_agent(_config: LoopConfig) -> AgentAdapter:
    """A generated body must never start an agent (its work dir may be any directory)."""
    raise ValueError(NO_AGENT)


def with_non_finite(body: object) -> st.SearchStrategy[object]:
    """The body as generated, or with NaN or an infinity in one of its numbers (JSON allows
    neither, Python's parser takes both): JSON generators never try them."""
    if not isinstance(body, dict):
        return st.just(body)
    field_ = st.sampled_from(NUMBERS)
    value = st.sampled_from(NON_FINITE)
    given = body.get("config")
    config: dict[str, Any] = given if isinstance(given, dict) else {}
    return st.one_of(
        st.just(body),
        st.builds(lambda name, x: {**body, name: x}, field_, value),
        st.builds(lambda name, x: {**body, "config": {**config, name: x}}, field_, value),
    )


def is_non_finite(value: object) -> bool:
    if isinstance(value, dict):
        return any(is_non_finite(v) for v in value.values())
    return isinstance(value, float) and not math.isfinite(value)


@schemathesis.check
def non_finite_numbers_are_refused(ctx, response, case):
    """A body holding NaN or an infinity is refused by validation (422 naming the field), not
    by something later (here: the agent that this test never starts)."""
    if is_non_finite(case.body):
        detail = response.json().get("detail", "") if response.status_code == 422 else ""
        if response.status_code != 422 or NO_AGENT in detail:
            raise AssertionError(f"non-finite number accepted: {response.status_code} {detail}")


@pytest.fixture
def app(sqlite_store: Store) -> Iterator[FastAPI]:
    """The app over a store holding one ended loop with all it records, its manager started
    (as under ``ralphctl serve``)."""
    ended = sqlite_store.create_loop(ended_loop(SEEDED))
    for n in (1, 2, 3):
        sqlite_store.begin_iteration(started_iteration(SEEDED, n))
        done = finished_iteration(SEEDED, n)
        sqlite_store.complete_iteration(done, ended, [("iteration_completed", {"iteration": n})])
    sqlite_store.add_error(SEEDED, 2, "agent_error", "the agent crashed", {"exit_code": 1})
    sqlite_store.add_checkpoint(SEEDED, 3, "0" * 40, {"iteration": 3})
    manager = LoopManager(sqlite_store, adapter_factory=no_agent, event_retention=None)
    application = create_app(sqlite_store, manager, TOKEN)
    with TestClient(application):
        yield application


@dataclass
class Tally:
    """What the run tried and what failed, by check."""

    requests: int = 0
    scenarios: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def add(self, scenario: ScenarioFinished) -> None:
        self.scenarios[scenario.phase.value] += 1
        recorder = scenario.recorder
        for interaction in recorder.interactions.values():
            self.requests += 1
            if interaction.response is not None:
                self.statuses[interaction.response.status_code] += 1
        for case_id, checks in recorder.checks.items():
            for check in checks:
                if check.status is Status.FAILURE:
                    case = recorder.cases[case_id].value
                    info = check.failure_info
                    what = info.failure.title if info is not None else ""
                    self.failures.append(
                        f"{check.name}: {case.method} {case.formatted_path} {what}"
                    )


def flatmap_body(context, body):
    """Loop bodies get non-finite numbers too (schemathesis hook)."""
    operation = context.operation
    if operation is not None and (operation.method, operation.path) == ("post", "/api/loops"):
        return with_non_finite(body)
    return st.just(body)


@pytest.mark.reliability
@pytest.mark.timeout(MAX_TIME_S + 240)  # the example and coverage phases come first
def test_every_answer_is_one_the_published_description_allows(app, figures):
    config = schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "headers": dict(AUTH),
            "generation": {"max-examples": MAX_EXAMPLES, "mode": "all", "database": "none"},
            "max-time": MAX_TIME_S,
            "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
        }
    )
    schema = schemathesis.openapi.from_asgi("/openapi.json", app, config=config)
    schema.hook(flatmap_body)
    tally = Tally()
    finished = None
    for event in schemathesis.engine.from_schema(schema).execute():
        if isinstance(event, ScenarioFinished):
            tally.add(event)
        elif isinstance(event, EngineFinished):
            finished = event

    note = f"scenarios {dict(tally.scenarios)}; statuses {dict(sorted(tally.statuses.items()))}"
    figures(Figure("schemathesis", tally.requests, "requests", len(tally.failures), note=note))
    assert finished is not None
    assert tally.requests > 0
    assert not tally.failures, "\n".join(sorted(set(tally.failures)))


def test_every_operation_requires_the_bearer_scheme(app):
    described = app.openapi()

    assert described["components"]["securitySchemes"]["bearerToken"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "The token `ralphctl serve` prints (stored in its `server-token` file).",
    }
    assert described["security"] == [{"bearerToken": []}]
    assert not [op for op in operations(described) if "security" in op]  # none is exempt


def test_every_error_an_operation_declares_is_the_one_error_body(app):
    described = app.openapi()

    bodies = {
        json_schema(response)["$ref"]
        for op in operations(described)
        for code, response in op["responses"].items()
        if int(code) >= 400
    }
    assert bodies == {"#/components/schemas/ErrorBody"}
    assert "HTTPValidationError" not in described["components"]["schemas"]


def test_every_operation_declares_401_and_a_database_failure_where_it_reads_one(app):
    paths = app.openapi()["paths"]

    assert all("401" in op["responses"] for op in operations(app.openapi()))
    assert "503" in paths["/api/loops"]["get"]["responses"]
    assert set(paths["/api/health"]["get"]["responses"]) == {"200", "401"}
    assert {"400", "409", "422", "429"} <= set(paths["/api/loops"]["post"]["responses"])


def operations(described: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for methods in described["paths"].values() for op in methods.values()]


def json_schema(response: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = response["content"]["application/json"]["schema"]
    return schema
