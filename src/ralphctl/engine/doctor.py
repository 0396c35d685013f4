"""``ralphctl doctor``: will a loop run here? Each check looks at one thing, offline and fast
(no API is called, no database is created or upgraded); ``Diagnosis.problems`` says what
stops the configured agent's loop, each with the fix to type."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ralphctl import __version__
from ralphctl.agents.health import AgentHealth, probe_all
from ralphctl.agents.registry import all_specs, known_agents

Status = Literal["ok", "warn", "fail", "info"]
_GIT_TIMEOUT_S = 2.0
_PG_CONNECT_TIMEOUT_S = 3
ISOLATE = "isolate_agent_config"


@dataclass(frozen=True, slots=True)
class Check:
    """One finding: ``fail`` stops a loop, ``warn`` may hurt one, ``info`` is just so."""

    name: str
    status: Status
    detail: str
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Every check, every agent, and the agent a loop here would run (``agent``, and where
    that choice came from)."""

    workdir: Path
    agent: str
    agent_from: str
    checks: list[Check] = field(default_factory=list)
    agents: list[AgentHealth] = field(default_factory=list)
    plugins: list[dict[str, Any]] = field(default_factory=list)  # per agent and scope

    @property
    def configured(self) -> AgentHealth | None:
        return next((health for health in self.agents if health.name == self.agent), None)

    @property
    def problems(self) -> list[str]:
        """What stops a loop of the configured agent here, each with its fix."""
        found = [
            f"{check.name}: {check.detail}" + (f": {check.fix}" if check.fix else "")
            for check in self.checks
            if check.status == "fail"
        ]
        configured = self.configured
        if configured is None:
            found.append(
                f"unknown agent {self.agent!r} ({self.agent_from}); "
                f"known agents: {', '.join(known_agents())}"
            )
        else:
            found += configured.problems()
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "workdir": str(self.workdir),
            "agent": {"name": self.agent, "from": self.agent_from},
            "ok": not self.problems,
            "problems": self.problems,
            "checks": [check.to_json() for check in self.checks],
            "agents": [health.to_json() for health in self.agents],
            "plugins": self.plugins,
        }


def diagnose(
    workdir: Path, *, db: str | None, agent: str | None, also: Sequence[Check] = ()
) -> Diagnosis:
    """Look at everything a loop in ``workdir`` needs; ``agent`` overrides the configured one,
    ``also`` are a face's own checks (the server's)."""
    with ThreadPoolExecutor(max_workers=1) as pool:  # the agents' probes beside the checks
        probing = pool.submit(lambda: probe_all(all_specs(), os.environ, Path.home()))
        config_check, configured_agent, settings = _configuration(workdir)
        chosen = agent or configured_agent
        plugin_checks, plugins = _plugin(workdir)
        checks = [
            _python(),
            config_check,
            *_git(workdir),
            _database(db),
            *plugin_checks,
            *_isolation(settings, chosen),
            _sandbox(settings),
            *_notifications(workdir),
            *also,
        ]
        agents = probing.result()
    source = "--agent" if agent else ("config" if "agent" in settings else "default")
    return Diagnosis(workdir, chosen, source, checks, agents, plugins)


# -- the checks ------------------------------------------------------------------------------


def _python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    return Check("python", "ok", f"Python {version} ({sys.executable}), ralphctl {__version__}")


def _configuration(workdir: Path) -> tuple[Check, str, dict[str, Any]]:
    """The loop settings from the files, the configured agent, and the settings the files
    gave (by name, for the checks that read them)."""
    from ralphctl.settings import ConfigError, resolve_loop_config

    try:
        resolved = resolve_loop_config(workdir)
    except ConfigError as exc:
        return Check("config", "fail", str(exc), "fix the file named above"), "claude", {}
    given = {name for name, source in resolved.sources.items() if source != "default"}
    settings = {name: value for name, value in resolved.config.to_json().items() if name in given}
    detail = f"{len(given)} setting(s) from files" if given else "defaults (no config file)"
    return Check("config", "ok", detail), resolved.config.agent, settings


def _git(workdir: Path) -> list[Check]:
    git = shutil.which("git")
    if git is None:
        return [
            Check("git", "warn", "git not found", "install git: checkpoints and rollback need it")
        ]
    version = _output([git, "--version"]) or "git (version unknown)"
    top = _output([git, "-C", str(workdir), "rev-parse", "--show-toplevel"])
    found = Check("git", "ok", version)
    if top is None:
        return [
            found,
            Check(
                "work dir",
                "warn",
                f"{workdir} is not in a git repository",
                f"git -C {workdir} init: checkpoints and rollback need a repository",
            ),
        ]
    return [found, Check("work dir", "ok", f"{workdir} (repository {top})")]


def _output(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _database(db: str | None) -> Check:
    """Reachable, and its migration level; never created or upgraded here."""
    from ralphctl.store.errors import StoreError
    from ralphctl.store.precheck import check_database
    from ralphctl.store.revision import HEAD_REVISION as head
    from ralphctl.store.url import display, resolve_url, sqlite_path

    url = resolve_url(db)
    try:
        check_database(db)
        revision = _revision(url)
    except StoreError as exc:
        return Check("database", "fail", str(exc), "give --db or RALPHCTL_DB a usable database")
    where = display(url)
    path = sqlite_path(url)
    if revision is None:
        state = "created on first use" if path is not None and not path.exists() else "empty"
        return Check("database", "ok", f"{where}: {state}")
    if revision == head:
        return Check("database", "ok", f"{where}: migration {revision} (current)")
    return Check(
        "database",
        "ok",
        f"{where}: migration {revision}; upgraded to {head} when next opened",
    )


def _revision(url: str) -> str | None:
    """The migration recorded in the database at ``url`` (None: no schema yet)."""
    from ralphctl.store.url import sqlite_path

    if not url.startswith("sqlite"):
        return _postgres_revision(url)
    path = sqlite_path(url)
    if path is None or not path.exists() or path.stat().st_size == 0:
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=2.0)
        try:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None  # a database without ralphctl's tables yet (the precheck passed it)
    return None if row is None else str(row[0])


def _postgres_revision(url: str) -> str | None:
    from sqlalchemy import create_engine
    from sqlalchemy.exc import SQLAlchemyError

    from ralphctl.store.database import describe_failure, schema_revision
    from ralphctl.store.errors import StoreError

    engine = create_engine(url, connect_args={"connect_timeout": _PG_CONNECT_TIMEOUT_S})
    try:
        with engine.connect() as conn:
            return schema_revision(conn)
    except SQLAlchemyError as exc:
        raise StoreError(describe_failure(url, exc)) from None
    finally:
        engine.dispose()


def _plugin(workdir: Path) -> tuple[list[Check], list[dict[str, Any]]]:
    """Each agent's integration (the hook and the commands of ``ralphctl plugin install``):
    a check per installed scope, or one saying it is not installed; and every scope's
    status, for ``--json``. An agent this ralphctl has no installer for is left out."""
    from ralphctl.plugin.installer import InstallError
    from ralphctl.plugin.layout import Interpreter
    from ralphctl.plugin.scopes import Scope
    from ralphctl.plugin.status import status
    from ralphctl.plugin.targets import AGENTS, TargetError, target

    checks: list[Check] = []
    states: list[dict[str, Any]] = []
    for agent in AGENTS:
        name = f"{agent} plugin"
        try:
            chosen = target(agent)
            interpreter = Interpreter(sys.executable)
            user = chosen.plan(Scope.USER, workdir, interpreter, __version__)
            here = chosen.plan(Scope.PROJECT, workdir, interpreter, __version__)
            found = [status(user, here, chosen.trust), status(here, user, chosen.trust)]
        except TargetError:
            continue
        except (InstallError, ValueError, OSError) as exc:
            checks.append(Check(name, "warn", f"cannot tell: {exc}"))
            continue
        states += [entry.to_json() for entry in found]
        install = f"ralphctl plugin install --agent {agent}"
        if not any(entry.installed for entry in found):
            detail = f"not installed (only loops started inside {chosen.label} need it)"
            checks.append(Check(name, "info", detail, f"{install} [--scope project]"))
        for entry in found:
            fix = f"{install} --scope {entry.scope}"
            if entry.trust in ("untrusted", "modified"):
                fix = f"start {chosen.label} and review the hook it asks about"
            if entry.installed and entry.problems:
                checks.append(
                    Check(f"{name} ({entry.scope})", "warn", "; ".join(entry.problems), fix)
                )
            elif entry.installed:
                trusted = "" if entry.trust is None else f", {entry.trust} by {chosen.label}"
                detail = (
                    f"installed, ralphctl {entry.version} ({entry.interpreter}) in "
                    f"{entry.manifest.parent}{trusted}"
                )
                checks.append(Check(f"{name} ({entry.scope})", "ok", detail))
    return checks, states


def _isolation(settings: dict[str, Any], agent: str) -> list[Check]:
    """Whether loop runs load the user's own agent configuration (hooks, plugins, MCP)."""
    from ralphctl.domain.config import LoopConfig

    if ISOLATE not in LoopConfig.field_names():
        return []
    if settings.get(ISOLATE):
        return [Check("isolation", "ok", f"{agent} runs without your own hooks, plugins, MCP")]
    check = Check(
        "isolation",
        "info",
        f"{agent} runs with your own agent configuration: your user-level hooks, plugins "
        "and MCP servers run inside loop runs too",
        f"set {ISOLATE} = true in [loops.defaults] to run loops without them",
    )
    return [check]


def _notifications(workdir: Path) -> list[Check]:
    """The channels notifications go to, and what keeps one from working (docs/notifications.md)."""
    from ralphctl.notify.config import Desktop, Webhook
    from ralphctl.settings import resolve_notify

    try:
        settings = resolve_notify(workdir)
    except ValueError:  # the config check above reports the file's problems
        return []
    if not settings.channels or settings.enabled is False:
        state = "turned off ([notify] enabled = false)" if settings.channels else "none configured"
        return [Check("notifications", "info", f"{state}; see docs/notifications.md")]
    keys = ", ".join(channel.key for channel in settings.channels)
    checks = [Check("notifications", "ok", f"to {keys}")]
    for channel in settings.channels:
        if isinstance(channel, Desktop) and shutil.which("notify-send") is None:
            fix = "install notify-send (Debian: libnotify-bin), or remove [notify.desktop]"
            checks.append(Check("notifications", "warn", "notify-send not found: skipped", fix))
        if (
            isinstance(channel, Webhook)
            and channel.secret_env
            and not os.environ.get(channel.secret_env)
        ):
            detail = f"{channel.secret_env} is not set here: {channel.url} gets no delivery"
            fix = f"export {channel.secret_env} where ralphctl run / serve runs"
            checks.append(Check("notifications", "warn", detail, fix))
    return checks


def _sandbox(settings: dict[str, Any]) -> Check:
    """Whether ``--sandbox`` can confine agents here: a ``fail`` when the configuration asks
    for it and it cannot (docs/safety.md)."""
    from ralphctl.agents.sandbox_host import sandbox_problem

    wanted = bool(settings.get("sandbox"))
    problem = sandbox_problem(network=settings.get("sandbox_net", "allow") == "allow")
    if problem is None:
        detail = "bubblewrap confines agents here" + (
            ": loops run sandboxed (sandbox = true)" if wanted else " (--sandbox)"
        )
        return Check("sandbox", "ok", detail)
    fix = "see docs/safety.md: what the sandbox needs"
    return Check("sandbox", "fail" if wanted else "info", f"--sandbox cannot run: {problem}", fix)
