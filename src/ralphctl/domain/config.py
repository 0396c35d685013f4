"""``LoopConfig``: every setting of one loop, validated, with the seed's defaults.

Pure data: reading ``ralphctl.toml`` and flags happens in ``ralphctl.settings``. Validation is
written out here rather than done by pydantic: importing and building a pydantic model costs
about 140 ms on a slow machine, more than every other step before ``ralphctl run`` spawns its
first agent (budget: 300 ms), and the Stop hook must validate without it too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ralphctl.domain import defaults
from ralphctl.domain.markers import Marker, parse_marker
from ralphctl.domain.stoprules import Budgets

if TYPE_CHECKING:  # imported when used: `ralphctl run` validates a config before its 1st spawn
    from ralphctl.domain.breaker import BreakerConfig
    from ralphctl.domain.costs import Price

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

PERMISSION_MODES = ("default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions")


class ConfigInvalid(ValueError):
    """One or more settings are invalid; ``errors`` maps each field to what is wrong with it."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{name}: {problem}" for name, problem in self.errors.items()))


def parse_duration(value: object) -> float:
    """Seconds from a number or text like ``90``, ``45s``, ``30m``, ``4h``, ``1h30m``."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{value!r} is not a duration: use seconds or e.g. 90s, 30m, 4h, 1h30m")
    if not isinstance(value, str):
        return float(value)
    text = value.strip().lower().replace(" ", "")
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"{value!r} is not a duration: use seconds or e.g. 90s, 30m, 4h, 1h30m")
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


@dataclass(frozen=True, slots=True)
class LoopConfig:
    """Budgets and behaviour of one loop; invalid values raise ConfigInvalid on construction.

    Durations may be given as text (``"4h"``) and are stored as seconds.
    """

    max_iterations: int = defaults.MAX_ITERATIONS
    max_runtime: float = defaults.MAX_RUNTIME_S
    max_cost_usd: float = defaults.MAX_COST_USD
    max_tokens: int | None = None
    checkpoint_interval: int = defaults.CHECKPOINT_INTERVAL
    cooldown: float = defaults.COOLDOWN_S
    completion_signal: str = defaults.COMPLETION_SIGNAL
    circuit_breaker_threshold: int = defaults.CIRCUIT_BREAKER_THRESHOLD
    iteration_timeout: float = defaults.ITERATION_TIMEOUT_S
    agent: str = "claude"
    agent_args: tuple[str, ...] = field(default=())
    permission_mode: str = defaults.PERMISSION_MODE
    script: str | None = None
    # circuit breaker (circuit_breaker_threshold above: consecutive errored iterations)
    no_progress_threshold: int | None = 3
    same_error_threshold: int | None = 5
    permission_denial_threshold: int | None = 2
    breaker_cooldown: float = 1800.0
    auto_recover: bool = False
    error_backoff_base: float = 1.0
    error_backoff_cap: float = 300.0
    # rate and usage limits
    max_calls_per_hour: int | None = None
    max_calls_per_hour_global: int | None = None
    usage_limit_wait: float = 300.0
    # verification gates, checkpoints, costs
    gates: tuple[str, ...] = field(default=())
    gate_timeout: float = 600.0
    checkpoint_branch: str | None = None
    count_cache_tokens: bool = False
    costs: dict[str, dict[str, float]] = field(default_factory=dict)
    # the model ([loops.llm]): None leaves the agent's own default
    model: str | None = None
    max_output_tokens: int | None = None

    def __post_init__(self) -> None:
        errors: dict[str, str] = {}
        for name, check in _CHECKS.items():
            try:
                object.__setattr__(self, name, check(getattr(self, name)))
            except ValueError as exc:
                errors[name] = str(exc)
        if errors:
            raise ConfigInvalid(errors)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> LoopConfig:
        """Build from settings files and flags: unknown keys are errors, not silently ignored."""
        known = cls.field_names()
        unknown = {key: f"unknown setting; known: {', '.join(known)}" for key in values}
        for key in known:
            unknown.pop(key, None)
        if unknown:
            raise ConfigInvalid(unknown)
        return cls(**values)

    @property
    def marker(self) -> Marker:
        return parse_marker(self.completion_signal)

    @property
    def budgets(self) -> Budgets:
        """The budgets; consecutive errors are the circuit breaker's (see ``breaker``)."""
        return Budgets(
            max_iterations=self.max_iterations,
            max_runtime_s=self.max_runtime,
            max_cost_usd=self.max_cost_usd,
            max_tokens=self.max_tokens,
        )

    @property
    def breaker(self) -> BreakerConfig:
        from ralphctl.domain.breaker import BreakerConfig

        return BreakerConfig(
            max_consecutive_errors=self.circuit_breaker_threshold,
            same_error_threshold=self.same_error_threshold,
            no_progress_threshold=self.no_progress_threshold,
            permission_denial_threshold=self.permission_denial_threshold,
            cooldown_s=self.breaker_cooldown,
            auto_recover=self.auto_recover,
        )

    @property
    def prices(self) -> Mapping[str, Price]:
        """The shipped price table with the user's ``[loops.costs]`` entries over it."""
        from ralphctl.domain.costs import DEFAULT_PRICES, Price

        return {**DEFAULT_PRICES, **{model: Price(**p) for model, p in self.costs.items()}}

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["agent_args"] = list(self.agent_args)
        data["gates"] = list(self.gates)
        return data


def _integer(minimum: int, *, optional: bool = False) -> Callable[[object], int | None]:
    def check(value: object) -> int | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be a whole number >= {minimum}, not {value!r}")
        if value < minimum:
            raise ValueError(f"must be >= {minimum}, not {value}")
        return value

    return check


def _threshold(value: object) -> int | None:
    """A breaker threshold: a whole number >= 1, or false/None to turn that trip off."""
    if value is None or value is False:
        return None
    return _integer(1)(value)


def _positive_number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number > 0, not {value!r}")
    if value <= 0:
        raise ValueError(f"must be > 0, not {value}")
    return float(value)


def _duration(minimum: float, *, inclusive: bool) -> Callable[[object], float]:
    def check(value: object) -> float:
        seconds = parse_duration(value)
        if seconds < minimum or (seconds == minimum and not inclusive):
            bound = ">=" if inclusive else ">"
            raise ValueError(f"must be {bound} {minimum:g} seconds, not {value!r}")
        return seconds

    return check


def _text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be non-empty text, not {value!r}")
    return value


def _signal(value: object) -> str:
    text = _text(value)
    parse_marker(text)
    return text


def _arguments(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ValueError(f"must be a list of strings, not {value!r}")
    if not all(isinstance(item, str) for item in value):
        raise ValueError(f"must be a list of strings, not {value!r}")
    return tuple(value)


def _permission_mode(value: object) -> str:
    if value not in PERMISSION_MODES:
        raise ValueError(f"must be one of {', '.join(PERMISSION_MODES)}, not {value!r}")
    return str(value)


def _optional_text(value: object) -> str | None:
    return None if value is None else _text(value)


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, not {value!r}")
    return value


def _commands(value: object) -> tuple[str, ...]:
    commands = _arguments(value)
    if not all(command.strip() for command in commands):
        raise ValueError("must not contain an empty command")
    return commands


_PRICE_KEYS = ("input", "output", "cache_read", "cache_write")


def _prices(value: object) -> dict[str, dict[str, float]]:
    """``{model prefix: {input, output, cache_read, cache_write}}`` in USD per million tokens."""
    if not isinstance(value, dict):
        raise ValueError(f"must be a table of models, not {value!r}")
    prices: dict[str, dict[str, float]] = {}
    for model, price in value.items():
        if not isinstance(price, dict) or sorted(price) != sorted(_PRICE_KEYS):
            raise ValueError(f"{model}: give exactly {', '.join(_PRICE_KEYS)} (USD per million)")
        for key, amount in price.items():
            if isinstance(amount, bool) or not isinstance(amount, int | float) or amount < 0:
                raise ValueError(f"{model}.{key}: must be a number >= 0, not {amount!r}")
        prices[str(model).lower()] = {key: float(amount) for key, amount in price.items()}
    return prices


_CHECKS: dict[str, Callable[[Any], Any]] = {
    "max_iterations": _integer(1),
    "max_runtime": _duration(0, inclusive=False),
    "max_cost_usd": _positive_number,
    "max_tokens": _integer(1, optional=True),
    "checkpoint_interval": _integer(0),
    "cooldown": _duration(0, inclusive=True),
    "completion_signal": _signal,
    "circuit_breaker_threshold": _integer(1),
    "iteration_timeout": _duration(0, inclusive=False),
    "agent": _text,
    "agent_args": _arguments,
    "permission_mode": _permission_mode,
    "script": _optional_text,
    "no_progress_threshold": _threshold,
    "same_error_threshold": _threshold,
    "permission_denial_threshold": _threshold,
    "breaker_cooldown": _duration(0, inclusive=True),
    "auto_recover": _flag,
    "error_backoff_base": _duration(0, inclusive=True),
    "error_backoff_cap": _duration(0, inclusive=True),
    "max_calls_per_hour": _integer(1, optional=True),
    "max_calls_per_hour_global": _integer(1, optional=True),
    "usage_limit_wait": _duration(0, inclusive=False),
    "gates": _commands,
    "gate_timeout": _duration(0, inclusive=False),
    "checkpoint_branch": _optional_text,
    "count_cache_tokens": _flag,
    "costs": _prices,
    "model": _optional_text,
    "max_output_tokens": _integer(1, optional=True),
}
