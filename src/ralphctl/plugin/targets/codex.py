"""Codex CLI: ralphctl's Stop hook in a ``hooks.json`` (CLI 0.169.0, ``agents.codex_hooks``).

- ``user``: ``$CODEX_HOME/hooks.json`` (``~/.codex`` without it): every project.
- ``project``: ``<project>/.codex/hooks.json``; Codex reads a project's ``.codex/`` only in a
  project the user trusts.

Hooks are on by default in 0.169.0 (no feature flag to set). Codex runs a hook the user has
not trusted only under ``--dangerously-bypass-hook-trust``: the trust is the user's to give
(the TUI asks to review new hooks; it records ``hooks.state.<key>.trusted_hash`` in the user's
``config.toml``), so the installer writes none; ``trust`` says whether it was given.
``ralphctl run --mode hook --agent codex`` needs no installation: it brings its own hook,
with its trust, for the run. Codex 0.169.0 has no custom prompts, so no ``/ralph-loop``
command is installed.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from ralphctl.agents.codex_hooks import STOP_EVENT, hook_key, stop_group, trusted_hash
from ralphctl.agents.codex_session import codex_home
from ralphctl.plugin.layout import HOOK_TIMEOUT_S, Interpreter
from ralphctl.plugin.locations import MANIFEST_NAME, PROJECT_MANIFEST
from ralphctl.plugin.scopes import Plan, Scope, Wanted

LABEL = "Codex CLI"
HOOKS_FILE = "hooks.json"
FORMAT_ARGS = ("--format", "codex")
_TRUST = (
    " Codex runs the hook once you trust it: start `codex` and review the new hook when it"
    " asks (or run `codex exec --dangerously-bypass-hook-trust`)."
    " `ralphctl run --mode hook --agent codex` needs neither."
)
NOTES = {
    Scope.USER: "Start a new Codex session to load the hook." + _TRUST,
    Scope.PROJECT: (
        "The files in .codex/ name this machine's Python: keep .codex/hooks.json and"
        " .codex/ralphctl-install.local.json out of version control. Codex reads a project's"
        " .codex/ only when you trust the project." + _TRUST
    ),
}


def plan(scope: Scope, project: Path, interpreter: Interpreter, version: str) -> Plan:
    if scope is Scope.USER:
        directory, manifest = codex_home(), MANIFEST_NAME
    else:
        directory, manifest = project / ".codex", PROJECT_MANIFEST
    group = stop_group(interpreter.hook("stop", *FORMAT_ARGS), HOOK_TIMEOUT_S)
    return Plan(
        scope=scope,
        interpreter=interpreter,
        version=version,
        manifest=directory / manifest,
        files={},
        settings={directory / HOOKS_FILE: [Wanted(("hooks", STOP_EVENT), group, append=True)]},
        commands=(),
        agent="codex",
    )


def trust(plan: Plan) -> str:
    """Whether Codex runs the hook ``plan`` installs unattended: ``trusted`` (the user's
    ``config.toml`` holds its hash), ``modified`` (it holds another: the hook changed since
    it was trusted), ``untrusted``, or ``not installed`` (its group is not in hooks.json)."""
    ((hooks_file, (wanted,)),) = plan.settings.items()
    try:
        groups = json.loads(hooks_file.read_text(encoding="utf-8"))["hooks"][STOP_EVENT]
        index = groups.index(wanted.value)
    except (OSError, ValueError, KeyError, TypeError):
        return "not installed"
    try:
        config = tomllib.loads((codex_home() / "config.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        config = {}
    hooks = config.get("hooks")
    states = hooks.get("state") if isinstance(hooks, dict) else None
    state = states.get(hook_key(str(hooks_file), group=index)) if isinstance(states, dict) else None
    recorded = state.get("trusted_hash") if isinstance(state, dict) else None
    if recorded is None:
        return "untrusted"
    return "trusted" if recorded == trusted_hash(wanted.value) else "modified"
