"""Which agent CLIs ``ralphctl plugin install --agent X`` writes the hook into: one module each.

Every module ``ralphctl.plugin.targets.<agent>`` exports::

    def plan(scope: Scope, project: Path, interpreter: Interpreter, version: str) -> Plan

(what that scope installs, as ``ralphctl.plugin.scopes.Plan``; the generic installer writes
it and records the manifest uninstall reverts), and may export ``LABEL`` (the CLI's name as
its users know it), ``NOTES`` (a line per scope to print after installing) and
``trust(plan) -> str`` (whether a CLI that asks its user to trust a hook runs the installed
one: Codex). Modules load lazily, on first use: an agent whose module this ralphctl lacks is
a clear error, not a crash.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType

from ralphctl.plugin.layout import Interpreter
from ralphctl.plugin.scopes import Plan, Scope

#: The agents with an installer, in the order ``ralphctl plugin status`` lists them.
AGENTS = ("claude", "codex", "gemini", "copilot", "cursor", "opencode")
DEFAULT_AGENT = "claude"

PlanFunction = Callable[[Scope, Path, Interpreter, str], Plan]


class TargetError(ValueError):
    """No installer for that agent (unknown, or missing from this installation)."""


@dataclass(frozen=True, slots=True)
class Target:
    """One agent's installer: its plans, its name for users, its notes after install, and
    how to read whether the CLI trusts the installed hook (None: it asks no trust)."""

    agent: str
    label: str
    make_plan: PlanFunction
    notes: Mapping[Scope, str] = field(default_factory=dict)
    trust: Callable[[Plan], str] | None = None

    def plan(self, scope: Scope, project: Path, interpreter: Interpreter, version: str) -> Plan:
        """What ``scope`` installs for this agent, tagged with the agent."""
        return replace(self.make_plan(scope, project, interpreter, version), agent=self.agent)


def target(agent: str) -> Target:
    """The installer of ``agent``; TargetError when there is none."""
    if agent not in AGENTS:
        raise TargetError(f"no installer for agent {agent!r}; known: {', '.join(AGENTS)}")
    module = _load(agent)
    make_plan = getattr(module, "plan", None)
    if not callable(make_plan):
        raise TargetError(f"{module.__name__} does not export plan(): this ralphctl is broken")
    return Target(
        agent=agent,
        label=str(getattr(module, "LABEL", agent)),
        make_plan=make_plan,
        notes=getattr(module, "NOTES", {}),
        trust=getattr(module, "trust", None),
    )


def _load(agent: str) -> ModuleType:
    name = f"{__name__}.{agent}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        raise TargetError(
            f"this ralphctl has no installer for {agent} yet (no module {name})"
        ) from None
