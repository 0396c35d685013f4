"""``ralphctl agents install``: an agent's CLI, from npm or PyPI, into ralphctl's own prefix.

Never global, never sudo. Under ``executables.agents_home()``::

    bin/<executable>                 a link to the installed command (found by find_executable)
    installs/<agent>/<version>-<id>/ one install: an npm prefix, or a venv in ``venv/``
    manifest.json                    what is installed: agent, package, version, path, time
    .lock                            held while an install or an uninstall changes anything

An install is built in a directory of its own, then checked (``<executable> --version`` must
name the version), and only then made visible: the link in ``bin/`` is replaced atomically
and the manifest rewritten. A failed install deletes its directory, so nothing visible
changes; one cut short by a crash leaves a directory the manifest does not name, deleted by
the next install or uninstall. The directory is built where it stays, never renamed into
place: a venv's scripts name their interpreter by its absolute path.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from ralphctl.agents.bounded import TimedOut, run_bounded
from ralphctl.agents.executables import agents_home
from ralphctl.agents.spec import AgentSpec, Package
from ralphctl.atomic import write_atomic

MANIFEST = "manifest.json"
#: How long a registry install may take, and the installed command's ``--version``.
INSTALL_TIMEOUT_S = 900.0
VERSION_TIMEOUT_S = 60.0
_OUTPUT_TAIL = 2000  # characters of a failed command's output kept in the error


class InstallError(RuntimeError):
    """An install or uninstall that did not happen; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Installed:
    """One agent CLI installed by ralphctl (an entry of the manifest)."""

    agent: str
    registry: str
    package: str
    version: str
    executable: str  # the command's name, linked in bin/
    path: str  # the install's directory
    installed_at: str  # ISO 8601, UTC

    @property
    def command(self) -> Path:
        """The installed command itself (the link in bin/ points here)."""
        return command_in(Path(self.path), self.registry, self.executable)


@dataclass(frozen=True, slots=True)
class Tools:
    """The programs an install runs: ``npm`` (None: not found) and the Python that makes a
    PyPI agent's venv."""

    npm: str | None
    python: str

    @classmethod
    def found(cls) -> Tools:
        return cls(npm=shutil.which("npm"), python=sys.executable)


def install_hint(agent: str) -> str:
    """The command that installs ``agent``'s CLI for ralphctl."""
    return f"ralphctl agents install {agent}"


def command_in(directory: Path, registry: str, executable: str) -> Path:
    """Where an install in ``directory`` puts its command."""
    if registry == "npm":
        return directory / "node_modules" / ".bin" / executable
    return directory / "venv" / "bin" / executable


def installed_agents(home: Path | None = None) -> dict[str, Installed]:
    """What the manifest says is installed, by agent name (empty when nothing is)."""
    path = (home or agents_home()) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {name: Installed(**entry) for name, entry in data["agents"].items()}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InstallError(
            f"{path}: unreadable manifest ({exc}); delete it to start over"
        ) from None


def install(
    spec: AgentSpec,
    *,
    version: str | None = None,
    force: bool = False,
    home: Path | None = None,
    tools: Tools | None = None,
) -> Installed:
    """Install ``spec``'s CLI at ``version`` (default: the pinned one) and make it the one
    ralphctl runs. Already installed at that version: nothing is done (unless ``force``)."""
    package = _package(spec)
    version = version or package.version
    home = home or agents_home()
    tools = tools or Tools.found()
    with _locked(home):
        known = installed_agents(home)
        _sweep(home, spec.name, known.get(spec.name))
        current = known.get(spec.name)
        if current and current.version == version and not force and _intact(home, current):
            return current
        directory = home / "installs" / spec.name / f"{version}-{secrets.token_hex(4)}"
        directory.parent.mkdir(parents=True, exist_ok=True)
        try:
            command = _build(directory, package, version, tools)
            _verify(command, version)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        entry = Installed(
            agent=spec.name,
            registry=package.registry,
            package=package.name,
            version=version,
            executable=package.executable,
            path=str(directory),
            installed_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        _link(home / "bin" / package.executable, command)
        _write_manifest(home, {**known, spec.name: entry})
        if current is not None and current.path != entry.path:
            shutil.rmtree(current.path, ignore_errors=True)
        return entry


def uninstall(agent: str, *, home: Path | None = None) -> Installed | None:
    """Remove what ``install`` put in place for ``agent``; None when it installed nothing."""
    home = home or agents_home()
    with _locked(home):
        known = installed_agents(home)
        entry = known.pop(agent, None)
        if entry is not None:
            link = home / "bin" / entry.executable
            if link.is_symlink() and Path(os.readlink(link)).is_relative_to(entry.path):
                link.unlink()
            _write_manifest(home, known)
        _sweep(home, agent, None)  # its install, and anything an install cut short left
        return entry


# -- the steps ------------------------------------------------------------------------------


def _package(spec: AgentSpec) -> Package:
    if spec.package is None:
        raise InstallError(
            f"the {spec.name} agent is not installed from a package registry: "
            "ralphctl cannot install it (see `ralphctl agents list`)"
        )
    return spec.package


def _build(directory: Path, package: Package, version: str, tools: Tools) -> Path:
    """Install ``package`` at ``version`` into ``directory``; the command it installed."""
    directory.mkdir()
    if package.registry == "npm":
        if tools.npm is None:
            raise InstallError(
                f"npm is not on PATH: install Node.js (with npm) to install {package.name}, "
                "or install the agent yourself and put it on PATH"
            )
        _run(
            [
                tools.npm,
                "install",
                "--prefix",
                str(directory),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--omit=dev",
                f"{package.name}@{version}",
            ],
            f"npm install {package.name}@{version}",
            cwd=directory,
        )
    else:
        venv = directory / "venv"
        _run([tools.python, "-m", "venv", str(venv)], f"creating a venv in {venv}", cwd=directory)
        _run(
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                f"{package.name}=={version}",
            ],
            f"pip install {package.name}=={version}",
            cwd=directory,
        )
    command = command_in(directory, package.registry, package.executable)
    if not os.access(command, os.X_OK):
        raise InstallError(
            f"{package.name}@{version} installed no `{package.executable}` command ({command})"
        )
    return command


def _verify(command: Path, version: str) -> None:
    """``command --version`` must name ``version``."""
    output = _run([str(command), "--version"], f"{command} --version", timeout=VERSION_TIMEOUT_S)
    if not re.search(rf"(?<![\d.]){re.escape(version)}(?![\d.])", output):
        shown = output.strip()[:200] or "nothing"
        raise InstallError(f"{command} --version printed {shown!r}, not version {version}")


def _run(argv: list[str], what: str, *, cwd: Path | None = None, timeout: float = 0.0) -> str:
    """Run ``argv`` to its end; its output (stdout and stderr). InstallError if it fails."""
    try:
        done = run_bounded(argv, timeout_s=timeout or INSTALL_TIMEOUT_S, cwd=cwd, merge_stderr=True)
    except FileNotFoundError:
        raise InstallError(f"{what}: {argv[0]} not found") from None
    except OSError as exc:
        raise InstallError(f"{what}: cannot run {argv[0]} ({exc.strerror})") from None
    except TimedOut as exc:
        raise InstallError(f"{what}: {exc}") from None
    if done.returncode != 0:
        tail = done.stdout.strip()[-_OUTPUT_TAIL:]
        raise InstallError(f"{what} failed (exit {done.returncode}):\n{tail}")
    return done.stdout


def _link(link: Path, target: Path) -> None:
    """Point ``link`` at ``target``, replacing what was there in one rename."""
    link.parent.mkdir(parents=True, exist_ok=True)
    temp = link.with_name(f".{link.name}.{secrets.token_hex(4)}.tmp")
    temp.symlink_to(target)
    try:
        os.replace(temp, link)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _write_manifest(home: Path, entries: dict[str, Installed]) -> None:
    data = {"agents": {name: asdict(entry) for name, entry in sorted(entries.items())}}
    write_atomic(home / MANIFEST, json.dumps(data, indent=2) + "\n")


def _intact(home: Path, entry: Installed) -> bool:
    """The install is still whole: its command runs from the link in bin/."""
    link = home / "bin" / entry.executable
    return os.access(entry.command, os.X_OK) and link.resolve() == entry.command.resolve()


def _sweep(home: Path, agent: str, keep: Installed | None) -> None:
    """Delete what an install of ``agent`` cut short left (directories no manifest names)."""
    parent = home / "installs" / agent
    if not parent.is_dir():
        return
    for directory in parent.iterdir():
        if keep is None or str(directory) != keep.path:
            shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    """Hold ``home``'s lock: one install or uninstall at a time, across processes."""
    home.mkdir(parents=True, exist_ok=True)
    with (home / ".lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
