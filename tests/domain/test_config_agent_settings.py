"""The loop settings of agents: the command agent's command line and usage patterns, and
isolation from the user's own agent configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralphctl.domain.config import AGENT_OPTIONS, ConfigInvalid, LoopConfig
from ralphctl.settings import ConfigError, read_settings_file


def test_the_defaults_run_as_before() -> None:
    config = LoopConfig()

    assert config.agent_command is None
    assert config.agent_tokens_regex is None
    assert config.agent_cost_regex is None
    assert config.isolate_agent_config is False


def test_valid_settings_are_kept_as_written() -> None:
    config = LoopConfig(
        agent="command",
        agent_command="my-agent --in {prompt_file}",
        agent_tokens_regex=r"(?P<input>\d+) in",
        agent_cost_regex=r"\$(?P<cost>[\d.]+)",
        isolate_agent_config=True,
    )

    assert LoopConfig.from_mapping(config.to_json()) == config


def test_a_loop_stored_before_these_settings_reads_back_with_their_defaults() -> None:
    stored = LoopConfig().to_json()
    for name in ("agent_command", "agent_tokens_regex", "agent_cost_regex", "isolate_agent_config"):
        del stored[name]

    assert LoopConfig.from_mapping(stored) == LoopConfig()


@pytest.mark.parametrize(
    ("setting", "value", "problem"),
    [
        ("agent_command", "", "must be non-empty text"),
        ("agent_command", "my-agent 'open", "cannot be split into arguments"),
        ("agent_command", ["my-agent"], "must be non-empty text"),
        ("agent_tokens_regex", r"(\d+) in", r"needs a named group (?P<input>…)"),
        ("agent_tokens_regex", r"(?P<input>\d+", "not a valid regular expression"),
        ("agent_cost_regex", r"\$([\d.]+)", r"needs a named group (?P<cost>…)"),
        ("isolate_agent_config", "yes", "must be true or false"),
    ],
)
def test_invalid_settings_say_what_is_wrong(setting: str, value: object, problem: str) -> None:
    with pytest.raises(ConfigInvalid) as raised:
        LoopConfig.from_mapping({setting: value})

    assert problem in raised.value.errors[setting]


def test_every_agent_option_is_a_loop_setting() -> None:
    assert set(AGENT_OPTIONS) <= set(LoopConfig.field_names())


def test_a_settings_file_names_the_table_and_key_of_a_bad_pattern(tmp_path: Path) -> None:
    path = tmp_path / "ralphctl.toml"
    path.write_text(
        '[loops.defaults]\nagent = "command"\nagent_command = "my-agent"\n'
        "agent_cost_regex = 'Cost: (.+)'\nisolate_agent_config = true\n"
    )

    with pytest.raises(ConfigError, match=r"\[loops.defaults\] agent_cost_regex: needs a named"):
        read_settings_file(path)


def test_a_settings_file_sets_them_all(tmp_path: Path) -> None:
    path = tmp_path / "ralphctl.toml"
    path.write_text(
        '[loops.defaults]\nagent = "command"\nagent_command = "my-agent {prompt}"\n'
        "agent_tokens_regex = 'in=(?P<input>\\d+)'\nisolate_agent_config = true\n"
    )

    assert read_settings_file(path).loop_defaults == {
        "agent": "command",
        "agent_command": "my-agent {prompt}",
        "agent_tokens_regex": r"in=(?P<input>\d+)",
        "isolate_agent_config": True,
    }
