"""Where a loop's configuration comes from: defaults < user config < ralphctl.toml < flags."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralphctl.domain.config import ConfigInvalid, LoopConfig

PROJECT_FILE = "ralphctl.toml"


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


def _loop_defaults(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = read_toml(path)
    loops = data.get("loops", {})
    defaults = loops.get("defaults", {}) if isinstance(loops, dict) else None
    if not isinstance(defaults, dict):
        raise ConfigError(f"{path}: [loops.defaults] must be a table")
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
