"""Where settings come from: defaults < user config < ralphctl.toml < flags.

``[loops.defaults]`` and ``[loops.costs]`` make a loop's ``LoopConfig``; the rest of ``[loops]``
and ``[server]`` configure the manager and the server (``resolve_settings``).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ralphctl.domain.config import ConfigInvalid, LoopConfig

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
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc


def _table(data: Mapping[str, Any], name: str, path: Path) -> dict[str, Any]:
    """``data[name]`` (``{}`` when absent), which must be a table named ``[name]``."""
    table = data.get(name.rpartition(".")[2], {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{name}] must be a table")
    return table


def _file(path: Path) -> dict[str, Any]:
    return read_toml(path) if path.is_file() else {}


#: ``[loops.llm]`` key -> LoopConfig field.
_LLM_FIELDS = {"model": "model", "max_tokens": "max_output_tokens"}


def _loop_defaults(path: Path) -> dict[str, Any]:
    """``[loops.defaults]``, with ``[loops.costs]`` as its ``costs`` and ``[loops.llm]``
    (``model``, ``max_tokens``) as its ``model`` and ``max_output_tokens``."""
    loops = _table(_file(path), "loops", path)
    defaults = _table(loops, "loops.defaults", path)
    costs = _table(loops, "loops.costs", path)
    given = defaults.get("costs", {})
    if costs and isinstance(given, dict):  # anything else is LoopConfig's to report
        defaults = {**defaults, "costs": {**given, **costs}}
    for key, value in _table(loops, "loops.llm", path).items():
        if key not in _LLM_FIELDS:
            known = ", ".join(_LLM_FIELDS)
            raise ConfigError(f"{path}: [loops.llm] {key}: unknown setting; known: {known}")
        defaults = {**defaults, _LLM_FIELDS[key]: value}
    return defaults


def resolve_loop_config(
    workdir: Path,
    overrides: Mapping[str, Any] | None = None,
    *,
    base: Mapping[str, Any] | None = None,
    extra: tuple[str, Mapping[str, Any]] | None = None,
) -> ResolvedConfig:
    """Merge every layer and validate once; ``base`` is a stored config (for resume), ``extra``
    a named layer between the files and the flags (a workflow's settings)."""
    layers: list[tuple[str, Mapping[str, Any]]] = (
        [("stored", base)]
        if base
        else [
            (str(user_config_path()), _loop_defaults(user_config_path())),
            (str(workdir / PROJECT_FILE), _loop_defaults(workdir / PROJECT_FILE)),
        ]
    )
    if extra is not None:
        layers.append(extra)
    layers.append(("flag", {k: v for k, v in (overrides or {}).items() if v is not None}))
    merged: dict[str, Any] = {}
    sources = dict.fromkeys(LoopConfig.field_names(), "default")
    for origin, values in layers:
        for key, value in values.items():
            merged[key] = value
            sources[key] = origin
    try:
        return ResolvedConfig(LoopConfig.from_mapping(merged), sources)
    except ConfigInvalid as exc:
        raise ConfigError(_explain(exc, sources)) from None


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
    """``[loops]`` and ``[server]`` from the user config, then ``project_dir/ralphctl.toml``."""
    paths = [user_config_path()]
    if project_dir is not None:
        paths.append(project_dir / PROJECT_FILE)
    values: dict[str, dict[str, Any]] = {"loops": {}, "server": {}}
    sources: dict[str, str] = {}
    for section, settings in (("loops", LoopsSettings), ("server", ServerSettings)):
        sources |= {f"{section}.{f.name}": "default" for f in fields(settings)}
    for path in paths:
        data = _file(path)
        for section, resolved in values.items():
            for key, value in _section(data, section, path).items():
                resolved[key] = _checked(section, key, value, path)
                sources[f"{section}.{key}"] = str(path)
    return Settings(LoopsSettings(**values["loops"]), ServerSettings(**values["server"]), sources)


def _section(data: Mapping[str, Any], section: str, path: Path) -> dict[str, Any]:
    table = _table(data, section, path)
    if section == "loops":
        table = {k: v for k, v in table.items() if k not in _LOOP_CONFIG_TABLES}
    known = _CHECKS[section]
    unknown = sorted(set(table) - set(known))
    if unknown:
        allowed = ", ".join([*known, *(_LOOP_CONFIG_TABLES if section == "loops" else ())])
        raise ConfigError(f"{path}: [{section}] {unknown[0]}: unknown setting; known: {allowed}")
    return table


def _checked(section: str, key: str, value: object, path: Path) -> Any:
    try:
        return _CHECKS[section][key](value)
    except ValueError as exc:
        raise ConfigError(f"{path}: [{section}] {key}: {exc}") from None


def _whole(minimum: int, maximum: int | None = None) -> Callable[[object], int]:
    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be a whole number, not {value!r}")
        if value < minimum or (maximum is not None and value > maximum):
            bound = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
            raise ValueError(f"must be {bound}, not {value}")
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


_LOOP_CONFIG_TABLES = ("defaults", "costs", "llm")
_CHECKS: dict[str, dict[str, Callable[[object], Any]]] = {
    "loops": {
        "max_concurrent": _whole(1),
        "on_start": _choice(*ON_START),
        "event_retention": _whole(100),
    },
    "server": {"host": _host, "port": _whole(1, 65535)},
}
