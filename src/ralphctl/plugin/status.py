"""What is installed for one agent at one scope, and whether it still works (for Codex, also
whether the CLI trusts the installed hook: ``targets.codex.trust``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralphctl.plugin.installer import installed, registered
from ralphctl.plugin.scopes import Plan, Scope


@dataclass(frozen=True, slots=True)
class Status:
    agent: str
    scope: Scope
    manifest: Path
    installed: bool
    commands: tuple[str, ...]
    version: str | None = None
    interpreter: str | None = None
    interpreter_found: bool = False
    missing_files: tuple[Path, ...] = ()
    registered: bool | None = None  # user scope: Claude Code's record names the marketplace
    also_installed: Scope | None = None  # the other scope, whose hook would run too
    trust: str | None = None  # trusted, untrusted, modified, not installed; None: not asked

    @property
    def problems(self) -> list[str]:
        found = []
        if self.installed and not self.interpreter_found:
            found.append(f"the interpreter {self.interpreter} is gone: install again")
        found += [f"missing: {path}" for path in self.missing_files]
        if self.installed and self.registered is False:
            found.append(
                "Claude Code's record of marketplaces no longer names ralphctl's: install again"
            )
        if self.installed and self.trust in TRUST_PROBLEMS:
            found.append(TRUST_PROBLEMS[self.trust])
        if self.installed and self.also_installed:
            found.append(
                f"also installed at {self.also_installed} scope: the Stop hook runs twice per"
                " stop and every stop counts twice; uninstall one of them"
            )
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "scope": str(self.scope),
            "installed": self.installed,
            "manifest": str(self.manifest),
            "commands": list(self.commands),
            "version": self.version,
            "interpreter": self.interpreter,
            "registered": self.registered,
            "trust": self.trust,
            "problems": self.problems,
        }


#: Why a hook the CLI does not trust (Codex: ``targets.codex.trust``) does not run unattended.
TRUST_PROBLEMS = {
    "untrusted": "the CLI has not trusted the hook yet, so it does not run: start the CLI "
    "and review the new hook when it asks",
    "modified": "the hook changed since the CLI trusted it, so it does not run: start the "
    "CLI and review it again",
    "not installed": "the hook is no longer in the CLI's hooks file: install again",
}


def status(plan: Plan, other: Plan, trust: Callable[[Plan], str] | None = None) -> Status:
    """Compare the manifest of ``plan``'s scope with the disk; ``other`` is the other scope;
    ``trust`` tells whether the CLI trusts the installed hook (for a CLI that asks)."""
    manifest = installed(plan.manifest)
    if manifest is None:
        return Status(plan.agent, plan.scope, plan.manifest, False, plan.commands)
    return Status(
        agent=plan.agent,
        scope=plan.scope,
        manifest=plan.manifest,
        installed=True,
        commands=plan.commands,
        version=manifest.version,
        interpreter=manifest.interpreter,
        interpreter_found=os.access(manifest.interpreter, os.X_OK),
        missing_files=tuple(path for path in manifest.files if not path.is_file()),
        registered=all(map(registered, plan.registrations)) if plan.registrations else None,
        also_installed=other.scope if installed(other.manifest) else None,
        trust=None if trust is None else trust(plan),
    )
