"""Agent adapters by name. Adding an agent: one module with its adapter, one line here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from ralphctl.agents.base import AgentAdapter, Capabilities, StreamParser
from ralphctl.agents.claude import ClaudeAdapter, ClaudeStreamParser
from ralphctl.agents.claude_session import session_tokens
from ralphctl.agents.scripted import ScriptedAdapter
from ralphctl.domain.model import ModelTokens


@dataclass(frozen=True, slots=True)
class _Agent:
    make: Callable[[Mapping[str, str]], AgentAdapter]
    options: frozenset[str]  # the options ``make`` accepts
    capabilities: Capabilities


def _scripted(options: Mapping[str, str]) -> AgentAdapter:
    if "script" not in options:
        raise ValueError("the scripted agent needs its script: option script=PATH")
    return ScriptedAdapter(options["script"])


_AGENTS: dict[str, _Agent] = {
    "claude": _Agent(lambda _: ClaudeAdapter(), frozenset(), ClaudeAdapter.capabilities),
    "scripted": _Agent(_scripted, frozenset({"script"}), ScriptedAdapter.capabilities),
}


# name -> its output's parser: reading what an agent printed needs none of its options
_PARSERS: dict[str, Callable[[], StreamParser]] = {
    "claude": ClaudeStreamParser,
    "scripted": ClaudeStreamParser,
}

#: Reads the tokens an agent kept of a session itself: by session id, those written since
#: a moment (None: all of them).
SessionTokensReader = Callable[[str, datetime | None], tuple[ModelTokens, ...]]

# name -> what reads the tokens an agent kept of a session itself (by session id)
_SESSION_TOKENS: dict[str, SessionTokensReader] = {
    "claude": session_tokens,
}


def known_agents() -> list[str]:
    return sorted(_AGENTS)


def same_session_agents() -> list[str]:
    """The agents that can keep one session going (hook mode): a Stop hook, and resuming the
    session when the agent ends it."""
    return sorted(
        name
        for name, agent in _AGENTS.items()
        if agent.capabilities.same_session and agent.capabilities.resume
    )


def adapter_for(name: str, *, options: Mapping[str, str] | None = None) -> AgentAdapter:
    """The adapter called ``name``; ValueError for an unknown agent or option."""
    if name not in _AGENTS:
        raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(known_agents())}")
    agent = _AGENTS[name]
    given = dict(options or {})
    unknown = sorted(set(given) - agent.options)
    if unknown:
        allowed = ", ".join(sorted(agent.options)) or "none"
        raise ValueError(
            f"agent {name!r} does not take option(s) {', '.join(unknown)} (it takes: {allowed})"
        )
    return agent.make(given)


def stream_parser(name: str) -> StreamParser:
    """A new parser for the output of the agent called ``name`` (to read a stored transcript);
    ValueError for an unknown agent."""
    if name not in _PARSERS:
        raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(known_agents())}")
    return _PARSERS[name]()


def session_tokens_reader(name: str) -> SessionTokensReader | None:
    """How to read the tokens agent ``name`` kept of a session (by its id), if it keeps any."""
    return _SESSION_TOKENS.get(name)
