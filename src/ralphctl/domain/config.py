"""``LoopConfig``: every setting of one loop, validated, with the seed's defaults.

Pure data: reading ``ralphctl.toml`` and flags happens in ``ralphctl.settings``. The Stop hook
never imports this module (pydantic is not on its hot path).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from ralphctl.domain import defaults
from ralphctl.domain.conditions import Budgets
from ralphctl.domain.markers import Marker, parse_marker

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

PERMISSION_MODES = ("default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions")


def parse_duration(value: object) -> object:
    """Accept seconds as a number or text like ``90``, ``45s``, ``30m``, ``4h``, ``1h30m``."""
    if not isinstance(value, str):
        return value
    text = value.strip().lower().replace(" ", "")
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"{value!r} is not a duration: use seconds or e.g. 90s, 30m, 4h, 1h30m")
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


Duration = Annotated[float, BeforeValidator(parse_duration)]


class LoopConfig(BaseModel):
    """Budgets and behaviour of one loop. Unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    max_iterations: int = Field(
        defaults.MAX_ITERATIONS, ge=1, description="Stop after this many iterations."
    )
    max_runtime: Duration = Field(
        defaults.MAX_RUNTIME_S, gt=0, description="Active running time budget."
    )
    max_cost_usd: float = Field(
        defaults.MAX_COST_USD, gt=0, description="Stop once the loop has cost this much."
    )
    max_tokens: int | None = Field(None, ge=1, description="Input + output tokens budget.")
    checkpoint_interval: int = Field(
        defaults.CHECKPOINT_INTERVAL, ge=0, description="Git checkpoint every N (0: off)."
    )
    cooldown: Duration = Field(defaults.COOLDOWN_S, ge=0, description="Pause between iterations.")
    completion_signal: str = Field(
        defaults.COMPLETION_SIGNAL, min_length=1, description="What completes the loop."
    )
    circuit_breaker_threshold: int = Field(
        defaults.CIRCUIT_BREAKER_THRESHOLD, ge=1, description="Consecutive errors that fail it."
    )
    iteration_timeout: Duration = Field(
        defaults.ITERATION_TIMEOUT_S, gt=0, description="Kill an iteration after this."
    )
    agent: str = Field("claude", min_length=1, description="Agent adapter name.")
    agent_args: list[str] = Field(default_factory=list, description="Extra agent CLI arguments.")
    permission_mode: str = Field(
        defaults.PERMISSION_MODE, description="Claude Code --permission-mode."
    )
    script: str | None = Field(None, description="Script file of the scripted agent.")

    @field_validator("completion_signal")
    @classmethod
    def _marker_parses(cls, value: str) -> str:
        parse_marker(value)
        return value

    @field_validator("permission_mode")
    @classmethod
    def _known_permission_mode(cls, value: str) -> str:
        if value not in PERMISSION_MODES:
            raise ValueError(f"must be one of {', '.join(PERMISSION_MODES)}")
        return value

    @property
    def marker(self) -> Marker:
        return parse_marker(self.completion_signal)

    @property
    def budgets(self) -> Budgets:
        return Budgets(
            max_iterations=self.max_iterations,
            max_runtime_s=self.max_runtime,
            max_cost_usd=self.max_cost_usd,
            max_tokens=self.max_tokens,
            max_consecutive_errors=self.circuit_breaker_threshold,
        )

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
