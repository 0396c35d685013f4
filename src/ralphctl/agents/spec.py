"""What ralphctl knows of one agent besides its adapter: where its CLI comes from, how to tell
offline whether it is configured, and how to read its output. Each agent module exports one
``SPEC``; ``registry`` imports a module only when its agent is asked for."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from ralphctl.agents.base import AgentAdapter, Capabilities, StreamParser
from ralphctl.domain.model import ModelTokens

#: Reads the tokens an agent kept of a session itself: by session id, those written since
#: a moment (None: all of them).
SessionTokensReader = Callable[[str, datetime | None], tuple[ModelTokens, ...]]


@dataclass(frozen=True, slots=True)
class Package:
    """Where an agent's CLI is published: ``ralphctl agents install`` installs ``version``
    (the version ralphctl is tested with) and ``doctor`` compares the found one with it."""

    registry: Literal["npm", "pypi"]
    name: str  # "@openai/codex", "aider-chat"
    version: str
    executable: str  # the command the package installs


@dataclass(frozen=True, slots=True)
class Configuration:
    """Whether an agent has what it needs to reach its model (credentials, a provider), as
    found offline: ``detail`` says what was found, or what to set."""

    ok: bool
    detail: str


#: Checks an agent's configuration offline, from an environment and a home directory.
ConfigurationCheck = Callable[[Mapping[str, str], Path], Configuration]


def credential_in_env(env: Mapping[str, str], names: Iterable[str]) -> Configuration | None:
    """A good configuration naming the first of ``names`` set in ``env``; None if none is."""
    for name in names:
        if env.get(name):
            return Configuration(True, f"${name} is set")
    return None


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One agent: how to make its adapter (``options`` are the names ``make`` accepts), how to
    parse its output without one, what it can do, and where its CLI comes from.

    ``executable`` and ``bin_env`` (``RALPHCTL_<AGENT>_BIN``) locate an external CLI
    (``executables.find_executable``); both are None for an agent that is not one.

    ``sandbox_paths``: what the agent must be able to write under ``--sandbox``
    (``agents/sandbox_host``): its config, credentials and caches, relative to the home
    directory or to ``$VAR``, the path a variable of the agent's environment names
    (``$CODEX_HOME/``, ``$XDG_DATA_HOME/amp/``, ``$OPENCODE_CONFIG``; skipped when unset).
    A directory (``/`` at its end) is created if missing; a file is bound if it exists (a
    trailing ``*`` matches names that start so).
    """

    name: str
    summary: str
    make: Callable[[Mapping[str, str]], AgentAdapter]
    parser: Callable[[], StreamParser]
    capabilities: Capabilities
    options: frozenset[str] = frozenset()
    executable: str | None = None
    bin_env: str | None = None
    package: Package | None = None
    configured: ConfigurationCheck | None = None
    session_tokens: SessionTokensReader | None = None
    sandbox_paths: tuple[str, ...] = ()
