"""A tracker's budgets are re-checked on every Stop with the validator arming uses.

The tracker is a file the user (or the agent) can edit between two stops. A number there
that arming would refuse (NaN, an infinity, a negative, a subnormal runtime, a cost of
$1e300) must never switch a budget off or stretch it beyond sense: the loop is treated as a
corrupt tracker, so the stop is allowed, the loop deactivated, and the warning names the field.
"""

from __future__ import annotations

import math
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralphctl.domain import numbers
from ralphctl.hook.arming import arm
from ralphctl.hook.state import CorruptTracker, loop_state
from ralphctl.hook.tracker import load
from tests.hook.helpers import (
    SESSION,
    decision,
    fields_of,
    hook_env,
    run_hook,
    session_tracker,
    stop_event,
)

ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
EXAMPLES = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
EDGES = (math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 1e-310, 1e300, -1.0)


def tracker_with(tmp_path: Path, key: str, text: str) -> Path:
    """A freshly armed tracker whose ``key`` line reads ``key: text``, as a hand edit leaves it."""
    project = tmp_path / uuid.uuid4().hex
    project.mkdir()
    armed = arm(str(project), "Fix it", session_id=str(uuid.uuid4()), max_iterations=5)
    path = Path(armed.path)
    lines = [line for line in path.read_text().splitlines() if not line.startswith(f"{key}:")]
    lines.insert(1, f"{key}: {text}")
    path.write_text("\n".join(lines) + "\n")
    return path


def state_or_problem(path: Path) -> str | None:
    """None if the Stop would read the tracker as a loop, else the corrupt-tracker reason."""
    tracker = load(str(path))
    assert tracker is not None
    try:
        loop_state(tracker, now=time.time())
    except CorruptTracker as exc:
        return str(exc)
    return None


def float_text(value: float) -> str:
    """How a float reads in YAML: ``repr`` for finite numbers, ``.nan``/``.inf`` otherwise."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    return repr(value)


@EXAMPLES
@given(value=ANY_FLOAT | st.sampled_from(EDGES))
def test_a_cost_budget_in_the_tracker_counts_only_if_arming_would_accept_it(tmp_path, value):
    problem = state_or_problem(tracker_with(tmp_path, "max_cost_usd", float_text(value)))
    sane = math.isfinite(value) and 0 < value <= numbers.MAX_USD
    assert (problem is None) == sane, problem
    if problem is not None:
        assert problem.startswith("max_cost_usd ")


@EXAMPLES
@given(value=ANY_FLOAT | st.sampled_from(EDGES))
def test_a_runtime_budget_in_the_tracker_counts_only_if_arming_would_accept_it(tmp_path, value):
    problem = state_or_problem(tracker_with(tmp_path, "max_runtime_s", float_text(value)))
    sane = math.isfinite(value) and 0 < value <= numbers.MAX_SECONDS
    assert (problem is None) == sane, problem
    if problem is not None:
        assert problem.startswith("max_runtime_s ")


@pytest.mark.parametrize("key", ["max_iterations", "max_tokens"])
@pytest.mark.parametrize("text", ["nan", ".nan", ".inf", "-1", "0", "2.5", "3.0", "1e300"])
def test_a_whole_number_budget_that_is_not_a_sane_whole_number_is_refused(tmp_path, key, text):
    problem = state_or_problem(tracker_with(tmp_path, key, text))
    assert problem is not None
    assert problem.startswith(f"{key} ")


@pytest.mark.parametrize("key", ["max_iterations", "max_tokens"])
def test_a_whole_number_budget_beyond_what_a_browser_holds_exactly_is_refused(tmp_path, key):
    problem = state_or_problem(tracker_with(tmp_path, key, str(numbers.MAX_WHOLE + 1)))
    assert problem == f"{key} must be <= {numbers.MAX_WHOLE}, not {numbers.MAX_WHOLE + 1}"


@pytest.mark.parametrize(
    ("key", "text"),
    [("cost_usd", "-0.5"), ("cost_usd", ".nan"), ("tokens", "-3"), ("iteration", "1.5")],
)
def test_the_totals_the_runner_writes_are_checked_as_strictly_as_the_budgets(tmp_path, key, text):
    problem = state_or_problem(tracker_with(tmp_path, key, text))
    assert problem is not None
    assert problem.startswith(f"{key} ")


def test_a_negative_zero_cost_total_reads_as_nothing_spent(tmp_path):
    path = tracker_with(tmp_path, "cost_usd", "-0.0")
    assert state_or_problem(path) is None


@pytest.mark.parametrize(
    ("key", "text"),
    [("max_cost_usd", ".nan"), ("max_cost_usd", "1e300"), ("max_runtime_s", "-.inf")],
)
def test_a_stop_on_a_tracker_with_a_corrupt_budget_is_allowed_and_the_warning_names_it(
    tmp_path, key, text
):
    project = tmp_path / "project"
    project.mkdir()
    arm(str(project), "Fix it", session_id=SESSION, max_iterations=5)
    path = session_tracker(project)
    lines = [line for line in path.read_text().splitlines() if not line.startswith(f"{key}:")]
    path.write_text("\n".join([lines[0], f"{key}: {text}", *lines[1:]]) + "\n")
    done = run_hook(stop_event(), hook_env(project))
    assert decision(done) is None  # the stop is allowed: never a loop on a budget we cannot read
    warning = done.stderr.decode()
    assert "corrupt" in warning
    assert key in warning
    fields = fields_of(path)
    assert fields["active"] is False
    assert fields["ended_reason"] == "corrupt"
    assert str(fields["problem"]).startswith(f"{key} ")
