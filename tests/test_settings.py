from pathlib import Path

import pytest

from ralphctl.settings import ConfigError, resolve_loop_config


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "user-config.toml"))


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_without_files_or_flags_the_defaults_apply(tmp_path):
    resolved = resolve_loop_config(tmp_path)
    assert resolved.config.max_iterations == 100
    assert set(resolved.sources.values()) == {"default"}


def test_layers_override_in_order_and_sources_say_where_each_value_came_from(tmp_path, monkeypatch):
    user = write(tmp_path / "user.toml", "[loops.defaults]\nmax_iterations = 7\ncooldown = 1\n")
    monkeypatch.setenv("RALPHCTL_CONFIG", str(user))
    project = write(tmp_path / "ralphctl.toml", "[loops.defaults]\nmax_iterations = 9\n")
    resolved = resolve_loop_config(tmp_path, {"max_cost_usd": 2.5, "max_tokens": None})
    config = resolved.config
    assert (config.max_iterations, config.cooldown, config.max_cost_usd) == (9, 1, 2.5)
    assert resolved.sources["max_iterations"] == str(project)
    assert resolved.sources["cooldown"] == str(user)
    assert resolved.sources["max_cost_usd"] == "flag"
    assert resolved.sources["max_tokens"] == "default"


def test_a_stored_config_replaces_the_files_on_resume(tmp_path):
    write(tmp_path / "ralphctl.toml", "[loops.defaults]\nmax_iterations = 9\n")
    stored = {"max_iterations": 3, "cooldown": 0.0}
    resolved = resolve_loop_config(tmp_path, {"max_iterations": 5}, base=stored)
    assert resolved.config.max_iterations == 5
    assert resolved.config.cooldown == 0
    assert resolved.sources["cooldown"] == "stored"


def test_invalid_toml_names_the_file(tmp_path):
    write(tmp_path / "ralphctl.toml", "[loops.defaults\nmax_iterations = ")
    with pytest.raises(ConfigError, match=r"ralphctl\.toml: invalid TOML"):
        resolve_loop_config(tmp_path)


def test_invalid_values_name_the_file_the_table_and_the_key(tmp_path):
    write(tmp_path / "ralphctl.toml", "[loops.defaults]\nmax_cost_usd = -1\n")
    with pytest.raises(ConfigError, match=r"ralphctl.toml: \[loops.defaults\] max_cost_usd: must"):
        resolve_loop_config(tmp_path)


def test_unknown_keys_list_the_known_ones(tmp_path):
    write(tmp_path / "ralphctl.toml", "[loops.defaults]\nmax_iteration = 3\n")
    with pytest.raises(ConfigError, match=r"max_iteration.*unknown setting; known: max_iterations"):
        resolve_loop_config(tmp_path)


def test_bad_flags_are_reported_as_flags(tmp_path):
    with pytest.raises(ConfigError, match=r"max_iterations \(from flag\)"):
        resolve_loop_config(tmp_path, {"max_iterations": 0})


def test_defaults_must_be_a_table(tmp_path):
    write(tmp_path / "ralphctl.toml", "[loops]\ndefaults = 3\n")
    with pytest.raises(ConfigError, match=r"\[loops.defaults\] must be a table"):
        resolve_loop_config(tmp_path)


def test_the_llm_table_sets_the_model_and_its_output_token_limit(tmp_path):
    write(tmp_path / "ralphctl.toml", '[loops.llm]\nmodel = "sonnet"\nmax_tokens = 8000\n')
    config = resolve_loop_config(tmp_path).config
    assert (config.model, config.max_output_tokens) == ("sonnet", 8000)


def test_unknown_llm_keys_are_errors(tmp_path):
    write(tmp_path / "ralphctl.toml", "[loops.llm]\ntop_p = 0.2\n")
    with pytest.raises(ConfigError, match=r"\[loops.llm\] top_p: unknown setting"):
        resolve_loop_config(tmp_path)
