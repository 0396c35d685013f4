"""Agent adapters by name. Adding an agent: one module exporting its ``SPEC``, one line here.

Modules are imported only when their agent is asked for, so a run pays for its own agent's
import alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import import_module

from ralphctl.agents.base import AgentAdapter, StreamParser
from ralphctl.agents.spec import AgentSpec, SessionTokensReader

# name -> the module that exports its SPEC
_MODULES: dict[str, str] = {
    "aider": "ralphctl.agents.aider",
    "amp": "ralphctl.agents.amp",
    "claude": "ralphctl.agents.claude",
    "codex": "ralphctl.agents.codex",
    "command": "ralphctl.agents.command",
    "copilot": "ralphctl.agents.copilot",
    "cursor": "ralphctl.agents.cursor",
    "gemini": "ralphctl.agents.gemini",
    "opencode": "ralphctl.agents.opencode",
    "scripted": "ralphctl.agents.scripted",
}


def known_agents() -> list[str]:
    return sorted(_MODULES)


@cache
def spec_for(name: str) -> AgentSpec:
    """The spec of the agent called ``name``; ValueError for an unknown agent."""
    if name not in _MODULES:
        raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(known_agents())}")
    spec: AgentSpec = import_module(_MODULES[name]).SPEC
    return spec


def all_specs() -> list[AgentSpec]:
    """Every agent's spec, by name (imports every adapter module)."""
    return [spec_for(name) for name in known_agents()]


def same_session_agents() -> list[str]:
    """The agents that can keep one session going (hook mode): a Stop hook, and resuming the
    session when the agent ends it."""
    return [
        spec.name
        for spec in all_specs()
        if spec.capabilities.same_session and spec.capabilities.resume
    ]


def adapter_for(name: str, *, options: Mapping[str, str] | None = None) -> AgentAdapter:
    """The adapter called ``name``; ValueError for an unknown agent or option."""
    spec = spec_for(name)
    given = dict(options or {})
    unknown = sorted(set(given) - spec.options)
    if unknown:
        allowed = ", ".join(sorted(spec.options)) or "none"
        raise ValueError(
            f"agent {name!r} does not take option(s) {', '.join(unknown)} (it takes: {allowed})"
        )
    return spec.make(given)


def stream_parser(name: str) -> StreamParser:
    """A new parser for the output of the agent called ``name`` (to read a stored transcript);
    ValueError for an unknown agent."""
    return spec_for(name).parser()


def session_tokens_reader(name: str) -> SessionTokensReader | None:
    """How to read the tokens agent ``name`` kept of a session (by its id), if it keeps any."""
    return spec_for(name).session_tokens
