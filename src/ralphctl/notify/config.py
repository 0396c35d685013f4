"""``[notify]``: the channels notifications go to, read from a settings file.

```toml
[notify]
events = ["completed", "failed"]      # optional: what channels naming none are sent

[[notify.webhooks]]
url = "https://example.org/hooks/ralphctl"
secret_env = "RALPHCTL_HOOK_SECRET"   # or secret = "..."; signs each body (HMAC-SHA256)

[notify.desktop]
enabled = true

[[notify.commands]]
command = "jq -r .event >> ~/ralph-events.log"
```

Each channel has a key (``webhook:<url>``, ``command:<command>``, ``desktop``) that the outbox
records; the channel itself is looked up by that key again when a notification is delivered,
so a secret is never written to the database. ``parse_notify`` reports every problem of the
table through ``report`` (table, key, problem), as ``ralphctl.settings`` reports the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ralphctl.domain.notify_events import DEFAULT_EVENTS, event_names

Report = Callable[[str, "str | None", str], None]

WEBHOOK_TIMEOUT_S = 5.0
COMMAND_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Webhook:
    url: str
    events: tuple[str, ...] = DEFAULT_EVENTS
    secret: str | None = None
    secret_env: str | None = None
    max_attempts: int = 6
    timeout_s: float = WEBHOOK_TIMEOUT_S

    @property
    def key(self) -> str:
        return f"webhook:{self.url}"


@dataclass(frozen=True, slots=True)
class Command:
    command: str
    events: tuple[str, ...] = DEFAULT_EVENTS
    max_attempts: int = 3
    timeout_s: float = COMMAND_TIMEOUT_S

    @property
    def key(self) -> str:
        return f"command:{self.command}"


@dataclass(frozen=True, slots=True)
class Desktop:
    events: tuple[str, ...] = DEFAULT_EVENTS
    max_attempts: int = 1

    @property
    def key(self) -> str:
        return "desktop"


Channel = Webhook | Command | Desktop


@dataclass(frozen=True, slots=True)
class NotifySettings:
    """The channels of one or more files; ``enabled`` False turns every one off."""

    channels: tuple[Channel, ...] = ()
    enabled: bool | None = None  # None: not said (on)

    def over(self, lower: NotifySettings) -> NotifySettings:
        """This file's settings over a lower layer's: channels add up (a channel with the same
        key is this file's), ``enabled`` is this file's when it says it."""
        mine = {channel.key for channel in self.channels}
        kept = tuple(channel for channel in lower.channels if channel.key not in mine)
        enabled = lower.enabled if self.enabled is None else self.enabled
        return NotifySettings((*kept, *self.channels), enabled)

    def channels_for(self, event: str, loop_events: tuple[str, ...] | None) -> list[Channel]:
        """The channels ``event`` goes to, for a loop choosing ``loop_events`` (None: all)."""
        if self.enabled is False or (loop_events is not None and event not in loop_events):
            return []
        return [channel for channel in self.channels if event in channel.events]

    def channel(self, key: str) -> Channel | None:
        return next((channel for channel in self.channels if channel.key == key), None)


def parse_notify(table: Mapping[str, Any], report: Report) -> NotifySettings:
    """``[notify]`` checked as a whole; each problem goes to ``report``."""
    checked = _Table("notify", table, report)
    enabled = checked.get("enabled", _flag)
    events = checked.get("events", event_names) or DEFAULT_EVENTS
    channels: list[Channel] = []
    for index, hook in enumerate(checked.tables("webhooks")):
        channels += _webhook(_Table(f"notify.webhooks #{index + 1}", hook, report), events)
    for index, command in enumerate(checked.tables("commands")):
        channels += _command(_Table(f"notify.commands #{index + 1}", command, report), events)
    desktop = checked.table("desktop")
    if desktop is not None:
        channels += _desktop(_Table("notify.desktop", desktop, report), events)
    checked.no_others({"enabled", "events", "webhooks", "commands", "desktop"})
    return NotifySettings(tuple(channels), enabled)


def _webhook(table: _Table, events: tuple[str, ...]) -> list[Channel]:
    url = table.get("url", _url, required=True)
    secret = table.get("secret", _text)
    secret_env = table.get("secret_env", _env_name)
    if secret is not None and secret_env is not None:
        table.problem("secret_env", "give secret or secret_env, not both")
    hook_events = table.get("events", event_names) or events
    attempts = table.get("max_attempts", _attempts) or 6
    timeout = table.get("timeout", _seconds) or WEBHOOK_TIMEOUT_S
    table.no_others({"url", "secret", "secret_env", "events", "max_attempts", "timeout"})
    if url is None:
        return []
    return [Webhook(url, hook_events, secret, secret_env, attempts, timeout)]


def _command(table: _Table, events: tuple[str, ...]) -> list[Channel]:
    command = table.get("command", _text, required=True)
    command_events = table.get("events", event_names) or events
    attempts = table.get("max_attempts", _attempts) or 3
    timeout = table.get("timeout", _seconds) or COMMAND_TIMEOUT_S
    table.no_others({"command", "events", "max_attempts", "timeout"})
    return [] if command is None else [Command(command, command_events, attempts, timeout)]


def _desktop(table: _Table, events: tuple[str, ...]) -> list[Channel]:
    enabled = table.get("enabled", _flag)
    desktop_events = table.get("events", event_names) or events
    table.no_others({"enabled", "events"})
    return [] if enabled is False else [Desktop(desktop_events)]


@dataclass
class _Table:
    """One table of ``[notify]``: its values checked one by one, every problem reported."""

    name: str
    values: Mapping[str, Any]
    report: Report
    seen: set[str] = field(default_factory=set)

    def problem(self, key: str | None, text: str) -> None:
        self.report(self.name, key, text)

    def get(self, key: str, check: Callable[[object], Any], *, required: bool = False) -> Any:
        self.seen.add(key)
        if key not in self.values:
            if required:
                self.problem(key, "missing; it is required")
            return None
        try:
            return check(self.values[key])
        except ValueError as exc:
            self.problem(key, str(exc))
            return None

    def tables(self, key: str) -> list[Mapping[str, Any]]:
        """An array of tables (``[[notify.<key>]]``)."""
        self.seen.add(key)
        value = self.values.get(key, [])
        if isinstance(value, list) and all(isinstance(item, dict) for item in value):
            return value
        self.problem(key, f"must be an array of tables ([[{self.name}.{key}]]), not {value!r}")
        return []

    def table(self, key: str) -> Mapping[str, Any] | None:
        self.seen.add(key)
        value = self.values.get(key)
        if value is None or isinstance(value, dict):
            return value
        self.problem(key, f"must be a table ([{self.name}.{key}]), not {value!r}")
        return None

    def no_others(self, known: set[str]) -> None:
        for key in self.values:
            if key not in known:
                self.problem(key, f"unknown setting; known: {', '.join(sorted(known))}")


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, not {value!r}")
    return value


def _text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be non-empty text, not {value!r}")
    return value


def _url(value: object) -> str:
    text = _text(value)
    if not text.startswith(("http://", "https://")):
        raise ValueError(f"must be an http:// or https:// URL, not {text!r}")
    return text


def _env_name(value: object) -> str:
    text = _text(value)
    if not text.replace("_", "a").isalnum() or text[0].isdigit():
        raise ValueError(f"must be an environment variable's name, not {text!r}")
    return text


def _attempts(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 20:
        raise ValueError(f"must be a whole number from 1 to 20, not {value!r}")
    return value


def _seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 600:
        raise ValueError(f"must be a number of seconds above 0, at most 600, not {value!r}")
    return float(value)
