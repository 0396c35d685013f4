"""Where settings come from: defaults < user config < ralphctl.toml < flags.

``[loops.defaults]``, ``[loops.costs]`` and ``[loops.llm]`` make a loop's ``LoopConfig``; the
rest of ``[loops]`` and ``[server]`` configure the manager and the server
(``resolve_settings``). Every command reads a file the same way (``read_settings_file``): the
whole file is checked, and every problem in it (unknown table or key, invalid value) is
reported at once, each with the file, the table and the key.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ralphctl.domain import numbers
from ralphctl.domain.config import (
    ALIASES,
    ConfigInvalid,
    LoopConfig,
    canonical,
    closest,
    suggestion,
)

if TYPE_CHECKING:  # imported when a file has [notify]: `ralphctl run` starts without it
    from ralphctl.notify.config import NotifySettings

PROJECT_FILE = "ralphctl.toml"
ON_START = ("resume", "leave_paused")


class ConfigError(ValueError):
    """Invalid configuration; the message names the file or flag and the field."""


@dataclass(frozen=True, slots=True)
class ResolvedConfig:
    config: LoopConfig
    sources: dict[str, str]  # field -> "default" | a file path | "flag"


def user_config_path() -> Path:
    explicit = os.environ.get("RALPHCTL_CONFIG")
    if explicit:
        return Path(explicit)
    from platformdirs import user_config_dir

    return Path(user_config_dir("ralphctl")) / "config.toml"


def read_toml(path: Path) -> dict[str, Any]:
    """Read a TOML file, turning every failure into a ConfigError that names the file."""
    import tomllib  # only when there is a file: most runs have none

    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc


# -- one file, checked as a whole ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SettingsFile:
    """What one configuration file sets, every value checked (empty for a missing file)."""

    loop_defaults: dict[str, Any] = field(default_factory=dict)  # LoopConfig field -> value
    loops: dict[str, Any] = field(default_factory=dict)  # [loops] manager settings
    server: dict[str, Any] = field(default_factory=dict)  # [server]
    notify: NotifySettings | None = None  # [notify], None when the file has none


def read_settings_file(path: Path) -> SettingsFile:
    """Read and check ``path`` as a whole; ConfigError listing every problem in it."""
    if not path.is_file():
        return SettingsFile()
    problems = _Problems(path)
    data = read_toml(path)
    for key in data:
        if key not in _TOP_LEVEL:
            problems.unknown_top_level(key, data[key])
    loops = problems.table(data, "loops")
    server = problems.table(data, "server")
    found = SettingsFile(
        loop_defaults=_loop_defaults(loops, problems),
        loops=problems.checked("loops", loops, _MANAGER_CHECKS["loops"], skip=_LOOP_TABLES),
        server=problems.checked("server", server, _MANAGER_CHECKS["server"]),
        notify=_notify(data, problems),
    )
    problems.raise_any()
    return found


def _notify(data: Mapping[str, Any], problems: _Problems) -> NotifySettings | None:
    if "notify" not in data:
        return None
    from ralphctl.notify.config import parse_notify

    return parse_notify(problems.table(data, "notify"), problems.add)


def _loop_defaults(loops: Mapping[str, Any], problems: _Problems) -> dict[str, Any]:
    """``[loops.defaults]``, with ``[loops.costs]`` as its ``costs`` and ``[loops.llm]`` keys
    as theirs (``_LLM_FIELDS``), every value checked."""
    given_defaults = problems.table(loops, "loops.defaults")
    try:
        layer = canonical(given_defaults)
    except ConfigInvalid as exc:
        problems.add_all("loops.defaults", exc.errors)
        return {}
    # field -> (table, key there): errors name the key as the user wrote it (an alias too)
    tables = {ALIASES.get(key, key): ("loops.defaults", key) for key in given_defaults}
    costs = problems.table(loops, "loops.costs")
    given = layer.get("costs", {})
    if costs and isinstance(given, dict):  # anything else is LoopConfig's to report
        layer["costs"] = {**given, **costs}
        tables["costs"] = ("loops.costs", "")
    for key, value in problems.table(loops, "loops.llm").items():
        if key in _LLM_FIELDS:
            layer[_LLM_FIELDS[key]] = value
            tables[_LLM_FIELDS[key]] = ("loops.llm", key)
        else:
            problems.unknown_key("loops.llm", key, _LLM_FIELDS)
    try:
        LoopConfig.from_mapping(layer)
    except ConfigInvalid as exc:
        for name, problem in exc.errors.items():
            table, key = tables.get(name, ("loops.defaults", name))
            problems.add(table, key or None, problem)
    return layer


class _Problems:
    """Every problem found in one file, then one ConfigError listing them all."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[str] = []

    def add(self, table: str, key: str | None, problem: str) -> None:
        where = f"[{table}]" if key is None else f"[{table}] {key}"
        self.lines.append(f"{self.path}: {where}: {problem}")

    def add_all(self, table: str, errors: Mapping[str, str]) -> None:
        for key, problem in errors.items():
            self.add(table, key, problem)

    def table(self, data: Mapping[str, Any], name: str) -> dict[str, Any]:
        """``data``'s table ``name`` (its last dotted part), ``{}`` when absent or not one."""
        value = data.get(name.rpartition(".")[2], {})
        if isinstance(value, dict):
            return value
        self.lines.append(f"{self.path}: [{name}] must be a table, not {value!r}")
        return {}

    def unknown_top_level(self, key: str, value: object) -> None:
        """A top-level key we do not know: a mistyped table (its sub-tables named, with a
        suggestion), or a setting written outside its table."""
        known = ", ".join(f"[{table}]" for table in _TOP_LEVEL)
        if not isinstance(value, dict):
            home = _home_table(key)
            hint = f"; it belongs in [{home}]" if home else ""
            self.lines.append(f"{self.path}: {key}: unknown top-level setting{hint}")
            return
        guess = closest(key, _TOP_LEVEL)
        inner = [name for name, item in value.items() if isinstance(item, dict)]
        for name in [f".{part}" for part in inner] or [""]:
            hint = f"; did you mean [{guess}{name}]?" if guess else ""
            self.lines.append(f"{self.path}: [{key}{name}]: unknown table{hint} (known: {known})")

    def unknown_key(self, table: str, key: str, known: Mapping[str, Any]) -> None:
        self.add(table, key, f"unknown setting; known: {', '.join(known)}{suggestion(key, known)}")

    def checked(
        self,
        table: str,
        values: Mapping[str, Any],
        checks: Mapping[str, Callable[[object], Any]],
        skip: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """The values of ``[table]`` that pass their check (the others become problems)."""
        result: dict[str, Any] = {}
        for key, value in values.items():
            if key in skip:
                continue
            if key not in checks and isinstance(value, dict):
                hint = f"; did you mean [{table}.{guess}]?" if (guess := closest(key, skip)) else ""
                self.add(f"{table}.{key}", None, f"unknown table{hint}")
                continue
            if key not in checks:
                self.unknown_key(table, key, {**checks, **dict.fromkeys(skip)})
                continue
            try:
                result[key] = checks[key](value)
            except ValueError as exc:
                self.add(table, key, str(exc))
        return result

    def raise_any(self) -> None:
        if self.lines:
            count = len(self.lines)
            head = f"invalid configuration ({count} problem{'s' if count > 1 else ''}):"
            raise ConfigError("\n  ".join([head, *self.lines]))


def _home_table(key: str) -> str | None:
    """The table a setting written at the top level belongs in."""
    if key in LoopConfig.field_names() or key in ALIASES:
        return "loops.defaults"
    for table, checks in _MANAGER_CHECKS.items():
        if key in checks:
            return table
    return None


# -- a loop's configuration ---------------------------------------------------------------------


def resolve_loop_config(
    workdir: Path,
    overrides: Mapping[str, Any] | None = None,
    *,
    base: Mapping[str, Any] | None = None,
    extra: tuple[str, Mapping[str, Any]] | None = None,
) -> ResolvedConfig:
    """Merge every layer and validate once; ``base`` is a stored config (for resume), ``extra``
    a named layer between the files and the flags (a workflow's settings).

    The files are checked as a whole, as every command checks them, even on resume (where the
    stored config replaces their ``[loops.defaults]``).
    """
    files = [(str(path), read_settings_file(path).loop_defaults) for path in _paths(workdir)]
    layers: list[tuple[str, Mapping[str, Any]]] = [("stored", base)] if base else [*files]
    if extra is not None:
        layers.append(extra)
    layers.append(("flag", {k: v for k, v in (overrides or {}).items() if v is not None}))
    merged: dict[str, Any] = {}
    sources = dict.fromkeys(LoopConfig.field_names(), "default")
    try:
        for origin, values in layers:
            for key, value in canonical(values).items():
                merged[key] = value
                sources[key] = origin
        return ResolvedConfig(LoopConfig.from_mapping(merged), sources)
    except ConfigInvalid as exc:
        raise ConfigError(_explain(exc, sources)) from None


def _paths(project_dir: Path | None) -> list[Path]:
    """The configuration files, lowest layer first."""
    paths = [user_config_path()]
    if project_dir is not None:
        paths.append(project_dir / PROJECT_FILE)
    return paths


def _explain(exc: ConfigInvalid, sources: Mapping[str, str]) -> str:
    lines = []
    for name, problem in exc.errors.items():
        origin = sources.get(name, "default")
        where = "" if origin == "default" else f" (from {origin})"
        lines.append(f"{name}{where}: {problem}")
    return "invalid configuration:\n  " + "\n  ".join(lines)


# -- the manager's and the server's settings ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoopsSettings:
    """``[loops]``: how the manager runs loops."""

    max_concurrent: int = 5  # loops running at once; more wait as pending
    on_start: str = "resume"  # what a starting manager does with loops left active
    event_retention: int = 10_000  # events kept per loop (older ones are deleted)
    transcript_retention_days: int = 0  # iterations' full output kept this long (0: forever)


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """``[server]``: where ``ralphctl serve`` listens."""

    host: str = "127.0.0.1"
    port: int = 8765


@dataclass(frozen=True, slots=True)
class Settings:
    loops: LoopsSettings
    server: ServerSettings
    sources: dict[str, str]  # "loops.max_concurrent" -> "default" | a file path


def resolve_settings(project_dir: Path | None = None) -> Settings:
    """``[loops]`` and ``[server]`` from the user config, then ``project_dir/ralphctl.toml``;
    each file is checked as a whole (its loop tables too)."""
    values: dict[str, dict[str, Any]] = {"loops": {}, "server": {}}
    sources: dict[str, str] = {}
    for section, settings in (("loops", LoopsSettings), ("server", ServerSettings)):
        sources |= {f"{section}.{f.name}": "default" for f in fields(settings)}
    for path in _paths(project_dir):
        found = read_settings_file(path)
        for section, given in (("loops", found.loops), ("server", found.server)):
            values[section] |= given
            sources |= {f"{section}.{key}": str(path) for key in given}
    return Settings(LoopsSettings(**values["loops"]), ServerSettings(**values["server"]), sources)


def resolve_notify(project_dir: Path | None = None) -> NotifySettings:
    """``[notify]`` from the user config, then ``project_dir/ralphctl.toml`` (each file checked
    as a whole): the channels of both, the project's ``enabled`` over the user's."""
    from ralphctl.notify.config import NotifySettings

    notify = NotifySettings()
    for path in _paths(project_dir):
        found = read_settings_file(path).notify
        notify = notify if found is None else found.over(notify)
    return notify


def notify_configured(project_dir: Path | None = None) -> bool:
    """Whether a settings file of ``project_dir`` has a ``[notify]`` table (cheap: the
    notification modules are not imported)."""
    return any(read_settings_file(path).notify is not None for path in _paths(project_dir))


def _whole(minimum: int, maximum: int | None = None) -> Callable[[object], int]:
    def check(value: object) -> int:
        if maximum is None:
            return numbers.whole(value, minimum=minimum)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be a whole number, not {value!r}")
        if not minimum <= value <= maximum:
            raise ValueError(f"must be between {minimum} and {maximum}, not {value}")
        return value

    return check


def _choice(*choices: str) -> Callable[[object], str]:
    def check(value: object) -> str:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(map(repr, choices))}, not {value!r}")
        return str(value)

    return check


def _host(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a host name or address, not {value!r}")
    return value.strip()


_TOP_LEVEL = ("loops", "server", "notify")
_LOOP_TABLES = ("defaults", "costs", "llm")
#: ``[loops.llm]`` key -> LoopConfig field.
_LLM_FIELDS = {"model": "model", "max_tokens": "max_output_tokens", "temperature": "temperature"}
_MANAGER_CHECKS: dict[str, dict[str, Callable[[object], Any]]] = {
    "loops": {
        "max_concurrent": _whole(1),
        "on_start": _choice(*ON_START),
        "event_retention": _whole(100),
        "transcript_retention_days": _whole(0),
    },
    "server": {"host": _host, "port": _whole(1, 65535)},
}
