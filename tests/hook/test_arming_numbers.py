"""Arming checks its bounds with the same validator as flags, files and the API."""

from __future__ import annotations

import math
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralphctl.domain import numbers
from ralphctl.hook.arming import ArmError, arm
from ralphctl.hook.frontmatter import Scalar
from tests.hook.helpers import arm_cli, fields_of

ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
EXAMPLES = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def armed_with(tmp_path: Path, refusals: list[str], **bounds: float) -> dict[str, Scalar] | None:
    """The tracker's fields if arming accepted ``bounds``, else None (the reason in
    ``refusals``)."""
    project = tmp_path / uuid.uuid4().hex
    project.mkdir()
    try:
        armed = arm(str(project), "Fix it", session_id=str(uuid.uuid4()), **bounds)  # type: ignore[arg-type]
    except ArmError as exc:
        refusals.append(str(exc))
        return None
    return fields_of(Path(armed.path))


@EXAMPLES
@given(value=ANY_FLOAT)
def test_a_cost_bound_is_armed_exactly_when_it_is_a_sane_amount(tmp_path, value):
    refusals: list[str] = []
    fields = armed_with(tmp_path, refusals, max_cost_usd=value)
    sane = math.isfinite(value) and 0 < value <= numbers.MAX_USD
    assert (fields is not None) == sane
    assert all(reason.startswith("max cost: must be") for reason in refusals)
    if fields is not None:
        assert fields["max_cost_usd"] == value


@EXAMPLES
@given(value=ANY_FLOAT)
def test_a_runtime_bound_is_armed_exactly_when_it_is_a_sane_duration(tmp_path, value):
    refusals: list[str] = []
    fields = armed_with(tmp_path, refusals, max_runtime_s=value)
    sane = math.isfinite(value) and 0 < value <= numbers.MAX_SECONDS
    assert (fields is not None) == sane
    assert all(reason.startswith("max runtime: must be") for reason in refusals)
    if fields is not None:
        assert fields["max_runtime_s"] == value


@pytest.mark.parametrize(
    ("flag", "text"),
    [
        ("--max-cost", "nan"),
        ("--max-cost", "inf"),
        ("--max-runtime", "inf"),
        ("--max-runtime", "nan"),
    ],
)
def test_the_slash_commands_arm_refuses_nan_and_infinity(tmp_path, flag, text):
    done = arm_cli(tmp_path, "Fix it", "--session", str(uuid.uuid4()), flag, text)
    assert done.returncode == 2
    assert "error:" in done.stderr
    assert not (tmp_path / ".ralph" / "sessions").exists() or not any(
        (tmp_path / ".ralph" / "sessions").rglob("loop-tracker.md")
    )
