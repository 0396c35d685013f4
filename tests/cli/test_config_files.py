"""Every command reads a configuration file the same way: `run` refuses what `config show`
refuses, with the same message listing every problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ralphctl.cli.app import app
from ralphctl.settings import ConfigError

runner = CliRunner()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "no-user-config.toml"))
    (tmp_path / "script.json").write_text(json.dumps({"steps": [{"text": "hi"}]}))
    return tmp_path


def refusal(*args: str) -> str:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    assert isinstance(result.exception, ConfigError), result.output
    return str(result.exception)


@pytest.mark.parametrize(
    "text",
    [
        "[loops]\nmax_concurrent = 0\n",
        "[loop.defaults]\nmax_iterations = 3\n",
        "[server]\nport = 'http'\n[loops.defaults]\ncooldown = nan\n",
    ],
)
def test_run_and_config_show_refuse_a_file_with_the_same_message(workdir, text):
    (workdir / "ralphctl.toml").write_text(text)
    by_show = refusal("config", "show", "-C", str(workdir))
    script = str(workdir / "script.json")
    by_run = refusal("run", "x", "-C", str(workdir), "--script", script, "--dry-run")
    assert by_run == by_show
    assert by_run.startswith("invalid configuration")


def test_the_seeds_configuration_file_works_as_written(workdir):
    (workdir / "ralphctl.toml").write_text(
        "[loops.defaults]\nmax_runtime_seconds = 7200\ncooldown_seconds = 3\n"
        'completion_signal = "<ringmaster>COMPLETE</ringmaster>"\n'
        "[loops.llm]\ntemperature = 0.3\n"
        "[loops.costs]\ninput_per_mtok = 3.0\noutput_per_mtok = 15.0\n"
    )
    result = runner.invoke(app, ["config", "show", "-C", str(workdir), "--json"])
    assert result.exit_code == 0, result.output
    shown = {
        key: entry["value"] for key, entry in json.loads(result.output)["loops.defaults"].items()
    }
    assert (shown["max_runtime"], shown["cooldown"], shown["temperature"]) == (7200.0, 3.0, 0.3)
    assert shown["costs"]["*"]["input"] == 3.0
    assert shown["completion_signal"] == "<ringmaster>COMPLETE</ringmaster>"
