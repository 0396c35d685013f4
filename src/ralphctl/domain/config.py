"""``LoopConfig``: every setting of one loop, validated, with the seed's defaults.

Pure data: reading ``ralphctl.toml`` and flags happens in ``ralphctl.settings``. Validation is
written out here rather than done by pydantic: importing and building a pydantic model costs
about 140 ms on a slow machine, more than every other step before ``ralphctl run`` spawns its
first agent (budget: 300 ms), and the Stop hook must validate without it too. Numbers and
durations are checked by ``ralphctl.domain.numbers``, as everywhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ralphctl.domain import defaults, numbers
from ralphctl.domain.markers import Marker, detect_in_tracker, parse_marker
from ralphctl.domain.stoprules import Budgets

if TYPE_CHECKING:  # imported when used: `ralphctl run` validates a config before its 1st spawn
    from ralphctl.domain.breaker import BreakerConfig
    from ralphctl.domain.costs import Price

PERMISSION_MODES = ("default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions")
#: The sandbox's network (``sandbox_net``): the host's, or none at all.
SANDBOX_NETS = ("allow", "none")
#: What a loop does when its agent asks the absent user something (``on_question``).
ON_QUESTION = ("continue", "wait")
#: The settings that configure one agent's adapter: each agent's spec names those it takes
#: (``AgentSpec.options``); giving one to an agent that does not take it is an error.
AGENT_OPTIONS = ("script", "agent_command", "agent_tokens_regex", "agent_cost_regex")
#: Documented other names of settings (the seed's configuration file uses them).
ALIASES = {"max_runtime_seconds": "max_runtime", "cooldown_seconds": "cooldown"}


class ConfigInvalid(ValueError):
    """One or more settings are invalid; ``errors`` maps each field to what is wrong with it."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{name}: {problem}" for name, problem in self.errors.items()))


def canonical(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with each alias (``ALIASES``) under its setting's own name; ConfigInvalid
    when a setting is given under both names."""
    renamed: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for key, value in values.items():
        name = ALIASES.get(key, key)
        if name != key and name in values:
            errors[key] = f"an alias of {name}, which is given too: give one of them"
        renamed[name] = value
    if errors:
        raise ConfigInvalid(errors)
    return renamed


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name that ``name`` is most likely a typo of, if any."""
    from difflib import get_close_matches  # only when there is a typo to explain

    matches = get_close_matches(name, list(known), n=1, cutoff=0.6)
    return matches[0] if matches else None


def suggestion(name: str, known: Iterable[str]) -> str:
    """``"; did you mean X?"`` for a likely typo of a known name, else ``""``."""
    guess = closest(name, known)
    return f"; did you mean {guess}?" if guess else ""


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
    # the command agent (docs/agents/command.md): its command line, the usage its output shows
    agent_command: str | None = None
    agent_tokens_regex: str | None = None
    agent_cost_regex: str | None = None
    # without the user's own plugins, hooks and MCP servers (docs/agents/isolation.md)
    isolate_agent_config: bool = False
    # install the agent's pinned CLI when it is missing (docs/agents/install.md)
    auto_install: bool = False
    # run the agent under bubblewrap (docs/safety.md); its network: allow or none
    sandbox: bool = False
    sandbox_net: str = "allow"
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
    # the agent's questions: go on with a safe default, or wait (up to the timeout) for `tell`
    on_question: str = "continue"
    question_timeout: float = 1800.0
    # hook mode, Gemini CLI only: each block also clears the model's memory (docs/hook-mode.md)
    clear_context: bool = False
    # verification gates, checkpoints, costs
    gates: tuple[str, ...] = field(default=())
    gate_timeout: float = 600.0
    checkpoint_branch: str | None = None
    count_cache_tokens: bool = False
    costs: dict[str, dict[str, float]] = field(default_factory=dict)
    # the model ([loops.llm]): None leaves the agent's own default
    model: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None  # for agents that take one; the others warn (README)
    # a workflow's loop (docs/workflows.md): a tracker file, the continuation, plugins
    tracker_template: str | None = None  # fresh mode keeps a tracker file made from it
    continue_message: str | None = None  # opens the prompt from iteration 2 on
    plugins: tuple[str, ...] = field(default=())  # enabled in the agent's runs
    # the events this loop notifies about (docs/notifications.md); None: each channel's own
    notify: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        errors: dict[str, str] = {}
        for name, check in _CHECKS.items():
            try:
                object.__setattr__(self, name, check(getattr(self, name)))
            except ValueError as exc:
                errors[name] = str(exc)
        if "tracker_template" not in errors and "completion_signal" not in errors:
            template = self.tracker_template
            if template is not None and detect_in_tracker(template, self.marker).evidence:
                errors["tracker_template"] = (
                    "its last line already declares completion or BLOCKED, so the loop would "
                    "end at once; end the template with something else"
                )
        if errors:
            raise ConfigInvalid(errors)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> LoopConfig:
        """Build from settings files and flags (aliases accepted). Unknown keys are errors, not
        silently ignored, and reported together with every invalid value."""
        named = canonical(values)
        known = cls.field_names()
        errors = {
            key: f"unknown setting; known: {', '.join(known)}{suggestion(key, known)}"
            for key in named
            if key not in known
        }
        try:
            config = cls(**{key: value for key, value in named.items() if key in known})
        except ConfigInvalid as exc:
            raise ConfigInvalid(errors | exc.errors) from None
        if errors:
            raise ConfigInvalid(errors)
        return config

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
        """The shipped price table with the user's ``[loops.costs]`` entries over it; a flat
        ``[loops.costs]`` price (``EVERY_MODEL``) replaces the shipped table."""
        from ralphctl.domain.costs import DEFAULT_PRICES, EVERY_MODEL, Price

        shipped = {} if EVERY_MODEL in self.costs else DEFAULT_PRICES
        return {**shipped, **{model: Price(**p) for model, p in self.costs.items()}}

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["agent_args"] = list(self.agent_args)
        data["gates"] = list(self.gates)
        data["plugins"] = list(self.plugins)
        data["notify"] = None if self.notify is None else list(self.notify)
        return data


def _integer(minimum: int, *, optional: bool = False) -> Callable[[object], int | None]:
    def check(value: object) -> int | None:
        if value is None and optional:
            return None
        return numbers.whole(value, minimum=minimum)

    return check


def _threshold(value: object) -> int | None:
    """A breaker threshold: a whole number >= 1, or false/None to turn that trip off."""
    if value is None or value is False:
        return None
    return numbers.whole(value, minimum=1)


def _duration(*, allow_zero: bool) -> Callable[[object], float]:
    def check(value: object) -> float:
        return numbers.duration(value, allow_zero=allow_zero)

    return check


def _optional_temperature(value: object) -> float | None:
    return None if value is None else numbers.temperature(value)


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


def _on_question(value: object) -> str:
    if value not in ON_QUESTION:
        raise ValueError(f"must be one of {', '.join(ON_QUESTION)}, not {value!r}")
    return str(value)


def _sandbox_net(value: object) -> str:
    if value not in SANDBOX_NETS:
        raise ValueError(f"must be one of {', '.join(SANDBOX_NETS)}, not {value!r}")
    return str(value)


def _optional_text(value: object) -> str | None:
    return None if value is None else _text(value)


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, not {value!r}")
    return value


def _command_line(value: object) -> str | None:
    """A command line, split as a shell would (quotes, no expansion), or None."""
    if value is None:
        return None
    import shlex  # only when a command agent is configured

    text = _text(value)
    try:
        shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"cannot be split into arguments ({exc}): {text!r}") from None
    return text


def _tokens_regex(value: object) -> str | None:
    if value is None:
        return None
    from ralphctl.domain.usage_patterns import tokens_pattern

    return tokens_pattern(_text(value)).pattern


def _cost_regex(value: object) -> str | None:
    if value is None:
        return None
    from ralphctl.domain.usage_patterns import cost_pattern

    return cost_pattern(_text(value)).pattern


def _notify_events(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    from ralphctl.domain.notify_events import event_names  # only when a loop chooses events

    return event_names(value)


def _commands(value: object) -> tuple[str, ...]:
    commands = _arguments(value)
    if not all(command.strip() for command in commands):
        raise ValueError("must not contain an empty command")
    return commands


def _names(value: object) -> tuple[str, ...]:
    names = _arguments(value)
    if not all(name.strip() and name == name.strip() for name in names):
        raise ValueError(f"must be names without surrounding spaces, not {list(names)!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"must not repeat a name: {list(names)!r}")
    return names


#: The four prices of a model, in USD per million tokens. ``input_per_mtok`` and so on are
#: accepted too (the seed's spelling).
PRICE_KEYS = ("input", "output", "cache_read", "cache_write")
_PRICE_ALIASES = {f"{key}_per_mtok": key for key in PRICE_KEYS}
_EVERY_MODEL = "*"  # costs.EVERY_MODEL, which is imported only when prices are needed


def _prices(value: object) -> dict[str, dict[str, float]]:
    """``{model prefix: {input, output, cache_read, cache_write}}`` in USD per million tokens.

    Flat keys (``input = 3.0`` directly in ``[loops.costs]``) are the price of every model,
    stored under ``costs.EVERY_MODEL``; per-model tables beside them still win for their models.
    """
    if not isinstance(value, dict):
        raise ValueError(f"must be a table of models, not {value!r}")
    flat = {key: amount for key, amount in value.items() if not isinstance(amount, dict)}
    tables = {model: price for model, price in value.items() if isinstance(price, dict)}
    prices: dict[str, dict[str, float]] = {}
    problems: list[str] = []
    for model, price in tables.items():
        try:
            prices[str(model).lower()] = _price(price)
        except ValueError as exc:
            problems.append(f"{model}: {exc}")
    if flat:
        try:
            prices[_EVERY_MODEL] = _price(flat)
        except ValueError as exc:
            problems.append(f"flat price (every model): {exc}")
    if problems:
        raise ValueError("; ".join(problems))
    return prices


def _price(given: Mapping[str, object]) -> dict[str, float]:
    """One model's price; the cache prices default to input and 1.25 x input when left out
    (never below what they cost, so a budget is never overrun by a missing price)."""
    price: dict[str, float] = {}
    for key, amount in given.items():
        name = _PRICE_ALIASES.get(key, key)
        if name not in PRICE_KEYS:
            known = ", ".join([*PRICE_KEYS, *_PRICE_ALIASES])
            raise ValueError(f"{key}: unknown price; known: {known}")
        if name in price:
            raise ValueError(f"{key}: {name} is given twice")
        try:
            price[name] = numbers.cost(amount, allow_zero=True)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    if "input" not in price or "output" not in price:
        raise ValueError("give at least input and output (USD per million tokens)")
    price.setdefault("cache_read", price["input"])
    price.setdefault("cache_write", price["input"] * 1.25)
    return {key: price[key] for key in PRICE_KEYS}


_CHECKS: dict[str, Callable[[Any], Any]] = {
    "max_iterations": _integer(1),
    "max_runtime": _duration(allow_zero=False),
    "max_cost_usd": numbers.cost,
    "max_tokens": _integer(1, optional=True),
    "checkpoint_interval": _integer(0),
    "cooldown": _duration(allow_zero=True),
    "completion_signal": _signal,
    "circuit_breaker_threshold": _integer(1),
    "iteration_timeout": _duration(allow_zero=False),
    "agent": _text,
    "agent_args": _arguments,
    "permission_mode": _permission_mode,
    "script": _optional_text,
    "agent_command": _command_line,
    "agent_tokens_regex": _tokens_regex,
    "agent_cost_regex": _cost_regex,
    "isolate_agent_config": _flag,
    "auto_install": _flag,
    "sandbox": _flag,
    "sandbox_net": _sandbox_net,
    "no_progress_threshold": _threshold,
    "same_error_threshold": _threshold,
    "permission_denial_threshold": _threshold,
    "breaker_cooldown": _duration(allow_zero=True),
    "auto_recover": _flag,
    "error_backoff_base": _duration(allow_zero=True),
    "error_backoff_cap": _duration(allow_zero=True),
    "max_calls_per_hour": _integer(1, optional=True),
    "max_calls_per_hour_global": _integer(1, optional=True),
    "usage_limit_wait": _duration(allow_zero=False),
    "on_question": _on_question,
    "question_timeout": _duration(allow_zero=False),
    "clear_context": _flag,
    "gates": _commands,
    "gate_timeout": _duration(allow_zero=False),
    "checkpoint_branch": _optional_text,
    "count_cache_tokens": _flag,
    "costs": _prices,
    "model": _optional_text,
    "max_output_tokens": _integer(1, optional=True),
    "temperature": _optional_temperature,
    "tracker_template": _optional_text,
    "continue_message": _optional_text,
    "plugins": _names,
    "notify": _notify_events,
}
