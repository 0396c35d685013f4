"""Agent adapters by name. Adding an agent: one module with its adapter, one line here."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ralphctl.agents.base import AgentAdapter
from ralphctl.agents.claude import ClaudeAdapter
from ralphctl.agents.scripted import ScriptedAdapter


def _claude(options: Mapping[str, str]) -> AgentAdapter:
    return ClaudeAdapter()


def _scripted(options: Mapping[str, str]) -> AgentAdapter:
    if "script" not in options:
        raise ValueError("the scripted agent needs its script: option script=PATH")
    return ScriptedAdapter(options["script"])


# name -> (factory, the options it accepts)
_AGENTS: dict[str, tuple[Callable[[Mapping[str, str]], AgentAdapter], frozenset[str]]] = {
    "claude": (_claude, frozenset()),
    "scripted": (_scripted, frozenset({"script"})),
}


def known_agents() -> list[str]:
    return sorted(_AGENTS)


def adapter_for(name: str, *, options: Mapping[str, str] | None = None) -> AgentAdapter:
    """The adapter called ``name``; ValueError for an unknown agent or option."""
    if name not in _AGENTS:
        raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(known_agents())}")
    factory, accepted = _AGENTS[name]
    given = dict(options or {})
    unknown = sorted(set(given) - accepted)
    if unknown:
        allowed = ", ".join(sorted(accepted)) or "none"
        raise ValueError(
            f"agent {name!r} does not take option(s) {', '.join(unknown)} (it takes: {allowed})"
        )
    return factory(given)
