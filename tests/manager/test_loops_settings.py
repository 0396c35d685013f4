"""``[loops]`` and ``[server]``: validated, layered (user config < ralphctl.toml), with sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralphctl.settings import ConfigError, resolve_loop_config, resolve_settings


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_without_files_the_defaults_apply(tmp_path):
    settings = resolve_settings(tmp_path)
    assert (settings.loops.max_concurrent, settings.loops.on_start) == (5, "resume")
    assert settings.loops.event_retention == 10_000
    assert (settings.server.host, settings.server.port) == ("127.0.0.1", 8765)
    assert set(settings.sources.values()) == {"default"}


def test_the_project_file_overrides_the_user_file_and_sources_say_so(tmp_path, monkeypatch):
    user = write(
        tmp_path / "user.toml",
        "[loops]\nmax_concurrent = 2\non_start = 'leave_paused'\n[server]\nport = 9000\n",
    )
    monkeypatch.setenv("RALPHCTL_CONFIG", str(user))
    project = write(tmp_path / "ralphctl.toml", "[loops]\nmax_concurrent = 8\n")
    settings = resolve_settings(tmp_path)
    assert settings.loops.max_concurrent == 8
    assert settings.loops.on_start == "leave_paused"
    assert settings.server.port == 9000
    assert settings.sources["loops.max_concurrent"] == str(project)
    assert settings.sources["loops.on_start"] == str(user)
    assert settings.sources["server.host"] == "default"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[loops]\nmax_concurrent = 0\n", r"\[loops\] max_concurrent: must be >= 1, not 0"),
        (
            "[loops]\non_start = 'later'\n",
            r"\[loops\] on_start: must be one of 'resume', 'leave_paused'",
        ),
        ("[loops]\nevent_retention = 10\n", r"\[loops\] event_retention: must be >= 100"),
        ("[server]\nport = 70000\n", r"\[server\] port: must be between 1 and 65535"),
        ("[server]\nhost = ''\n", r"\[server\] host: must be a host name or address"),
        (
            "[loops]\nmax_concurent = 3\n",
            r"\[loops\] max_concurent: unknown setting; known: max_concurrent",
        ),
        ("server = 3\n", r"\[server\] must be a table"),
    ],
)
def test_invalid_settings_name_the_file_and_the_field(tmp_path, text, message):
    write(tmp_path / "ralphctl.toml", text)
    with pytest.raises(ConfigError, match=rf"ralphctl\.toml: {message}"):
        resolve_settings(tmp_path)


def test_loop_config_tables_sit_beside_the_manager_settings(tmp_path):
    write(
        tmp_path / "ralphctl.toml",
        "[loops]\nmax_concurrent = 2\n[loops.defaults]\nmax_iterations = 4\n"
        '[loops.costs."my-model"]\ninput = 1\noutput = 2\ncache_read = 0\ncache_write = 0\n',
    )
    assert resolve_settings(tmp_path).loops.max_concurrent == 2
    config = resolve_loop_config(tmp_path).config
    assert config.max_iterations == 4
    assert config.costs == {
        "my-model": {"input": 1.0, "output": 2.0, "cache_read": 0.0, "cache_write": 0.0}
    }
    assert "my-model" in config.prices
