"""Budgets and durations from flags and files: NaN, infinities and absurd values are refused
with the same words (``ralphctl.domain.numbers``), anything sane is used as given."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from ralphctl.cli.app import app
from ralphctl.domain import numbers
from ralphctl.settings import ConfigError

runner = CliRunner()
ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
EXAMPLES = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "no-user-config.toml"))
    (tmp_path / "script.json").write_text(json.dumps({"steps": [{"text": "hi"}]}))
    return tmp_path


def dry_run(workdir: Path, *flags: str) -> Result:
    script = str(workdir / "script.json")
    args = ["run", "Fix it", "-C", str(workdir), "--script", script, "--dry-run", *flags]
    return runner.invoke(app, args, env={"COLUMNS": "200"})


def refused(result: Result) -> str:
    assert isinstance(result.exception, ConfigError), result.output
    return str(result.exception)


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e999", "0", "-0.0", "2e6"])
def test_a_cost_flag_that_is_not_a_sane_amount_is_refused(workdir, text):
    message = refused(dry_run(workdir, "--max-cost", text))
    assert "max_cost_usd (from flag): must be" in message


@pytest.mark.parametrize("flag", ["--max-runtime", "--cooldown", "--iteration-timeout"])
@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e999", "-5", "400d"])
def test_a_duration_flag_that_is_not_a_sane_duration_is_refused(workdir, flag, text):
    assert "(from flag)" in refused(dry_run(workdir, flag, text))


@EXAMPLES
@given(value=ANY_FLOAT)
def test_a_cost_flag_is_used_exactly_when_it_is_a_sane_amount(workdir, value):
    result = dry_run(workdir, "--max-cost", repr(value))
    if math.isfinite(value) and 0 < value <= numbers.MAX_USD:
        assert result.exit_code == 0, result.output
        row = next(line for line in result.output.splitlines() if "max_cost_usd" in line)
        assert row.split("│")[2].strip() == json.dumps(value)
    else:
        assert "max_cost_usd (from flag)" in refused(result)


@EXAMPLES
@given(value=ANY_FLOAT)
def test_a_cost_in_the_project_file_is_used_exactly_when_it_is_a_sane_amount(workdir, value):
    (workdir / "ralphctl.toml").write_text(f"[loops.defaults]\nmax_cost_usd = {value!r}\n")
    result = runner.invoke(app, ["config", "show", "-C", str(workdir), "--json"])
    if math.isfinite(value) and 0 < value <= numbers.MAX_USD:
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["loops.defaults"]["max_cost_usd"]["value"] == value
    else:
        assert "[loops.defaults] max_cost_usd: must be" in refused(result)


@pytest.mark.parametrize(
    "line",
    ["max_runtime = inf", "max_runtime = nan", "cooldown = -inf", "max_runtime = '1e999'"],
)
def test_a_toml_duration_that_is_not_finite_is_refused_by_run_and_config_show(workdir, line):
    (workdir / "ralphctl.toml").write_text(f"[loops.defaults]\n{line}\n")
    by_run = refused(dry_run(workdir))
    by_show = refused(runner.invoke(app, ["config", "show", "-C", str(workdir)]))
    assert by_run == by_show
    assert f"[loops.defaults] {line.split()[0]}:" in by_run
