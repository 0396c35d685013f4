"""A configuration file is checked as a whole, the same way by every command."""

from pathlib import Path

import pytest

from ralphctl.domain.costs import price_for
from ralphctl.settings import ConfigError, resolve_loop_config, resolve_settings


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "user-config.toml"))


def project_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ralphctl.toml"
    path.write_text(text)
    return path


def problems_of(tmp_path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        resolve_loop_config(tmp_path)
    return str(caught.value).splitlines()[1:]


def test_every_problem_of_a_file_is_reported_at_once_with_file_table_and_key(tmp_path):
    path = project_file(
        tmp_path,
        "[loop.defaults]\nmax_iterations = 3\n"
        "[loops]\nmax_concurrent = 0\nmax_concurent = 2\n"
        "[loops.defaults]\nmax_cost_usd = nan\nmax_iteration = 3\n"
        "[loops.llm]\ntemperature = 9\n"
        "[server]\nport = 0\n",
    )
    lines = [line.strip() for line in problems_of(tmp_path)]
    assert lines == [
        f"{path}: [loop.defaults]: unknown table; did you mean [loops.defaults]?"
        " (known: [loops], [server], [notify])",
        f"{path}: [loops.defaults] max_iteration: unknown setting; known: "
        + lines[1].partition("known: ")[2],
        f"{path}: [loops.defaults] max_cost_usd: must be a finite number, not nan",
        f"{path}: [loops.llm] temperature: must be a temperature in [0, 2], not 9",
        f"{path}: [loops] max_concurrent: must be >= 1, not 0",
        f"{path}: [loops] max_concurent: unknown setting; known: max_concurrent, on_start, "
        + lines[5].partition("on_start, ")[2],
        f"{path}: [server] port: must be between 1 and 65535, not 0",
    ]
    assert lines[1].endswith("; did you mean max_iterations?")
    assert lines[5].endswith(", defaults, costs, llm; did you mean max_concurrent?")


def test_run_refuses_a_manager_setting_exactly_as_config_show_does(tmp_path):
    project_file(tmp_path, "[loops]\nmax_concurrent = 0\n")
    with pytest.raises(ConfigError) as by_run:
        resolve_loop_config(tmp_path)
    with pytest.raises(ConfigError) as by_settings:
        resolve_settings(tmp_path)
    assert str(by_run.value) == str(by_settings.value)
    assert "[loops] max_concurrent: must be >= 1, not 0" in str(by_run.value)


def test_resume_checks_the_files_too_though_the_stored_config_replaces_them(tmp_path):
    project_file(tmp_path, "[sever]\nport = 1\n")
    with pytest.raises(ConfigError, match=r"\[sever\]: unknown table; did you mean \[server\]"):
        resolve_loop_config(tmp_path, base={"max_iterations": 3})


def test_a_setting_written_outside_its_table_says_where_it_belongs(tmp_path):
    path = project_file(tmp_path, "max_iterations = 3\nport = 80\nwhatever = 1\n")
    assert [line.strip() for line in problems_of(tmp_path)] == [
        f"{path}: max_iterations: unknown top-level setting; it belongs in [loops.defaults]",
        f"{path}: port: unknown top-level setting; it belongs in [server]",
        f"{path}: whatever: unknown top-level setting",
    ]


def test_a_mistyped_loop_table_is_named_as_a_table_with_a_suggestion(tmp_path):
    project_file(tmp_path, "[loops.default]\nmax_iterations = 3\n")
    (line,) = problems_of(tmp_path)
    assert line.endswith("[loops.default]: unknown table; did you mean [loops.defaults]?")


def test_an_unknown_key_does_not_hide_the_invalid_values_beside_it(tmp_path):
    project_file(tmp_path, "[loops.defaults]\nbogus = 1\ncooldown = 'soon'\n")
    lines = problems_of(tmp_path)
    assert len(lines) == 2
    assert "[loops.defaults] bogus: unknown setting" in lines[0]
    assert "[loops.defaults] cooldown: 'soon' is not a duration" in lines[1]


def test_the_user_file_is_checked_as_a_whole_as_well(tmp_path, monkeypatch):
    user = tmp_path / "user.toml"
    user.write_text("[loops]\non_start = 'later'\n")
    monkeypatch.setenv("RALPHCTL_CONFIG", str(user))
    with pytest.raises(ConfigError, match=rf"{user}: \[loops\] on_start: must be one of"):
        resolve_loop_config(tmp_path)


# -- the seed's configuration file, as written ---------------------------------------------


def test_the_seed_duration_names_are_aliases_of_max_runtime_and_cooldown(tmp_path):
    path = project_file(
        tmp_path, "[loops.defaults]\nmax_runtime_seconds = 600\ncooldown_seconds = 2\n"
    )
    resolved = resolve_loop_config(tmp_path)
    assert (resolved.config.max_runtime, resolved.config.cooldown) == (600.0, 2.0)
    assert resolved.sources["max_runtime"] == str(path)


def test_a_flag_overrides_a_setting_given_in_the_file_under_its_alias(tmp_path):
    project_file(tmp_path, "[loops.defaults]\nmax_runtime_seconds = 600\n")
    resolved = resolve_loop_config(tmp_path, {"max_runtime": "2h"})
    assert resolved.config.max_runtime == 7200.0
    assert resolved.sources["max_runtime"] == "flag"


def test_a_setting_and_its_alias_in_one_table_is_an_error(tmp_path):
    project_file(tmp_path, "[loops.defaults]\nmax_runtime = 600\nmax_runtime_seconds = 60\n")
    (line,) = problems_of(tmp_path)
    assert "[loops.defaults] max_runtime_seconds: an alias of max_runtime" in line


def test_the_llm_temperature_is_kept_in_the_loop_config(tmp_path):
    project_file(tmp_path, "[loops.llm]\ntemperature = 0.2\n")
    assert resolve_loop_config(tmp_path).config.temperature == 0.2


def test_flat_costs_price_every_model_and_replace_the_shipped_table(tmp_path):
    project_file(
        tmp_path,
        "[loops.costs]\ninput_per_mtok = 3.0\noutput_per_mtok = 15.0\n"
        '[loops.costs."my-model"]\ninput = 1\noutput = 2\ncache_read = 0\ncache_write = 0\n',
    )
    config = resolve_loop_config(tmp_path).config
    assert config.costs["*"] == {
        "input": 3.0,
        "output": 15.0,
        "cache_read": 3.0,
        "cache_write": 3.75,
    }
    every = price_for("claude-opus-4-5", config.prices)
    own = price_for("my-model-2", config.prices)
    assert every is not None
    assert every.input == 3.0  # not the shipped 5.0
    assert own is not None
    assert own.input == 1.0  # its own table wins


def test_a_bad_flat_price_names_the_costs_table(tmp_path):
    project_file(tmp_path, "[loops.costs]\ninput = -1\noutput = 2\n")
    (line,) = problems_of(tmp_path)
    assert "[loops.costs]: flat price (every model): input: must be an amount in USD" in line


def test_an_invalid_value_given_under_an_alias_is_named_as_written(tmp_path):
    project_file(tmp_path, "[loops.defaults]\nmax_runtime_seconds = inf\n")
    (line,) = problems_of(tmp_path)
    assert "[loops.defaults] max_runtime_seconds: must be a finite number, not inf" in line
