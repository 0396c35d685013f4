"""``[notify]`` in the settings files: every problem reported with its file, table and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralphctl.domain.config import ConfigInvalid, LoopConfig
from ralphctl.domain.notify_events import DEFAULT_EVENTS
from ralphctl.notify.config import Command, Desktop, NotifySettings, Webhook
from ralphctl.settings import ConfigError, read_settings_file, resolve_notify


@pytest.fixture
def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "user.toml"
    monkeypatch.setenv("RALPHCTL_CONFIG", str(path))
    return path


def test_a_file_without_notify_has_none(tmp_path: Path) -> None:
    path = tmp_path / "ralphctl.toml"
    path.write_text("[loops]\nmax_concurrent = 2\n")

    assert read_settings_file(path).notify is None


def test_every_channel_is_read_with_its_events(tmp_path: Path) -> None:
    path = tmp_path / "ralphctl.toml"
    path.write_text(
        """
[notify]
events = ["completed", "failed"]

[[notify.webhooks]]
url = "https://example.org/hook"
secret_env = "HOOK_SECRET"
events = ["budget_warning", "parked", "question"]
max_attempts = 4

[[notify.commands]]
command = "logger -t ralphctl"
timeout = 5

[notify.desktop]
enabled = true
"""
    )

    notify = read_settings_file(path).notify

    assert notify is not None
    assert notify.channels == (
        Webhook(
            "https://example.org/hook",
            events=("budget_warning", "parked", "question"),
            secret_env="HOOK_SECRET",
            max_attempts=4,
        ),
        Command("logger -t ralphctl", events=("completed", "failed"), timeout_s=5.0),
        Desktop(events=("completed", "failed")),
    )


def test_every_problem_is_reported_at_once_with_file_table_and_key(tmp_path: Path) -> None:
    path = tmp_path / "ralphctl.toml"
    path.write_text(
        """
[notify]
events = ["complete"]

[[notify.webhooks]]
url = "ftp://example.org"
secret = "a"
secret_env = "B"

[[notify.webhooks]]
events = "completed"

[[notify.commands]]
command = "true"
retries = 3

[notify.desktop]
enabled = "yes"
"""
    )

    with pytest.raises(ConfigError) as raised:
        read_settings_file(path)

    lines = str(raised.value).splitlines()[1:]
    assert [line.strip() for line in lines] == [
        f"{path}: [notify] events: unknown event 'complete'; known: " + _known(),
        f"{path}: [notify.webhooks #1] url: must be an http:// or https:// URL, not "
        "'ftp://example.org'",
        f"{path}: [notify.webhooks #1] secret_env: give secret or secret_env, not both",
        f"{path}: [notify.webhooks #2] url: missing; it is required",
        f"{path}: [notify.webhooks #2] events: must be a list of event names, not 'completed'",
        f"{path}: [notify.commands #1] retries: unknown setting; known: command, events, "
        "max_attempts, timeout",
        f"{path}: [notify.desktop] enabled: must be true or false, not 'yes'",
    ]


def test_a_project_adds_its_channels_to_the_user_s_and_may_turn_them_all_off(
    tmp_path: Path, user_config: Path
) -> None:
    user_config.write_text('[[notify.webhooks]]\nurl = "https://example.org/mine"\n')
    project = tmp_path / "project"
    project.mkdir()
    (project / "ralphctl.toml").write_text('[[notify.commands]]\ncommand = "true"\n')

    both = resolve_notify(project)
    (project / "ralphctl.toml").write_text("[notify]\nenabled = false\n")
    off = resolve_notify(project)

    assert [channel.key for channel in both.channels] == [
        "webhook:https://example.org/mine",
        "command:true",
    ]
    assert both.channels_for("completed", None) == list(both.channels)
    assert off.channels_for("completed", None) == []


def test_a_loop_chooses_its_events_or_none() -> None:
    hook = Webhook("https://example.org/hook")
    settings = NotifySettings((hook,))
    chosen = LoopConfig.from_mapping({"notify": ["failed"]}).notify

    assert chosen == ("failed",)
    assert LoopConfig().notify is None
    assert settings.channels_for("completed", chosen) == []
    assert settings.channels_for("failed", chosen) == [hook]
    assert settings.channels_for("failed", ()) == []
    with pytest.raises(ConfigInvalid, match="notify"):
        LoopConfig.from_mapping({"notify": ["finished"]})


def test_channels_naming_no_events_get_the_defaults() -> None:
    assert DEFAULT_EVENTS == (
        "completed",
        "failed",
        "blocked",
        "parked",
        "circuit_breaker_tripped",
        "budget_warning",
        "question",
    )
    assert Webhook("https://example.org").events == DEFAULT_EVENTS


def _known() -> str:
    from ralphctl.domain.notify_events import NAMES

    return ", ".join(NAMES)
