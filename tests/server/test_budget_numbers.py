"""Budgets in an API body: the JSON Schema and the server refuse what flags and files refuse."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralphctl.domain import numbers
from ralphctl.server.schemas import LoopCreate
from tests.server.conftest import DONE, loop_body

NOT_SANE_COST = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True).filter(
    lambda value: not (math.isfinite(value) and 0 < value <= numbers.MAX_USD)
)
EXAMPLES = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def post(client: TestClient, body: dict[str, Any]) -> Any:
    """POST ``body`` as Python's json writes it: NaN and Infinity as bare words."""
    headers = {"Content-Type": "application/json"}
    return client.post("/api/loops", content=json.dumps(body), headers=headers)


@EXAMPLES
@given(value=NOT_SANE_COST)
def test_a_cost_budget_that_is_not_a_sane_amount_is_a_422(client, new_workdir, value):
    body = loop_body(new_workdir(), DONE, max_cost_usd=value)
    response = post(client, body)
    assert response.status_code == 422, response.text
    assert "max_cost_usd" in response.text


@EXAMPLES
@given(value=NOT_SANE_COST)
def test_a_cost_in_the_free_form_config_is_refused_the_same_way(client, new_workdir, value):
    body = loop_body(new_workdir(), DONE)
    body["config"]["max_cost_usd"] = value
    response = post(client, body)
    assert response.status_code == 422, response.text
    assert "max_cost_usd (from flag): must be" in response.json()["detail"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_runtime", math.inf),
        ("max_runtime", "inf"),
        ("max_runtime", 0),
        ("max_runtime", "400d"),
        ("cooldown", math.nan),
        ("cooldown", -1),
        ("max_iterations", 2**53 + 1),
        ("max_tokens", 1.5),
    ],
)
def test_a_budget_field_out_of_bounds_is_a_422(client, new_workdir, field, value):
    response = post(client, loop_body(new_workdir(), DONE, **{field: value}))
    assert response.status_code == 422, response.text
    assert field in response.text


@pytest.mark.parametrize("field", ["max_cost_usd", "max_runtime", "cooldown", "max_iterations"])
def test_the_published_schema_bounds_every_budget_and_excludes_nan(field):
    schema = LoopCreate.model_json_schema()["properties"][field]
    numeric = [branch for branch in schema["anyOf"] if branch.get("type") in ("number", "integer")]
    assert numeric
    assert all("maximum" in branch for branch in numeric)


def test_a_sane_budget_is_stored_as_given(client, new_workdir):
    body = loop_body(new_workdir(), DONE, max_cost_usd=5e-324, max_runtime="1h", cooldown=-0.0)
    response = post(client, body)
    assert response.status_code == 201, response.text
    config = response.json()["config"]
    assert (config["max_runtime"], config["cooldown"]) == (3600.0, 0.0)
    assert math.copysign(1.0, config["cooldown"]) == 1.0
