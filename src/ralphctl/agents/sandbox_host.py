"""``--sandbox`` on this machine: whether bubblewrap can confine a process here (asked once),
and the ``Sandbox`` of one run, from the home directory, the environment and the agent's
declared paths (``AgentSpec.sandbox_paths``). The command line itself is ``agents/sandbox``'s.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from ralphctl.agents.base import AgentUnavailable
from ralphctl.agents.executables import agents_home
from ralphctl.agents.sandbox import Sandbox, bwrap_argv

BWRAP_ENV = "RALPHCTL_BWRAP_BIN"
INSTALL_HINT = (
    "install bubblewrap (Debian and Ubuntu: `apt-get install bubblewrap`), "
    f"or set {BWRAP_ENV} to the path of bwrap"
)
PROBE_TIMEOUT_S = 10.0
#: Container engines' sockets: whoever may use one can start a container with any file.
ENGINE_SOCKETS = (
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
)
#: Under the home, what every agent may read: git's own configuration (the user's name and
#: email for a commit; ``~/.git-credentials`` stays hidden).
SHARED_READ_ONLY = (".gitconfig", ".config/git")


class SandboxUnavailable(AgentUnavailable):
    """``--sandbox`` was asked for and bubblewrap cannot confine the agent here; the message
    says why. Never answered by running the agent unconfined."""


def require(*, network: bool) -> None:
    """Raise SandboxUnavailable unless a sandbox (with the host's network, or without any)
    can be made here."""
    reason = sandbox_problem(network=network)
    if reason is not None:
        raise SandboxUnavailable(f"--sandbox: {reason}")


@functools.cache
def sandbox_problem(*, network: bool = True) -> str | None:
    """Why no sandbox can be made here, or None when one can: found by starting ``true``
    in one, once per process."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap runs on Linux only, not on {sys.platform}"
    try:
        bwrap, env_tool = _tools()
    except SandboxUnavailable as missing:
        return str(missing)
    trial = Sandbox(
        bwrap=bwrap,
        env_tool=env_tool,
        home=_home(Path.home()),
        workdir=PurePosixPath("/tmp"),
        network=network,
        as_root=os.geteuid() == 0,
    )
    argv = bwrap_argv(trial, ["true"])
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not be started ({exc})"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = said[-1] if said else f"exit status {done.returncode}"
        return f"bwrap cannot make a sandbox here: {detail} ({_namespaces_hint()})"
    return None


def host_sandbox(
    agent_paths: Iterable[str],
    workdir: Path,
    *,
    argv: Sequence[str],
    network: bool,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Sandbox:
    """The sandbox of one run of the agent command ``argv`` in ``workdir``, with ``env`` the
    agent's environment (default: this process's); SandboxUnavailable when none can be made
    here."""
    require(network=network)
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    bwrap, env_tool = _tools()
    hidden = [env["XDG_RUNTIME_DIR"]] if env.get("XDG_RUNTIME_DIR") else []
    return Sandbox(
        bwrap=bwrap,
        env_tool=env_tool,
        home=_home(home),
        workdir=_real(workdir),
        writable=tuple(
            _real(path) for path in (*agent_writable(agent_paths, home, env), *git_dirs(workdir))
        ),
        readable=tuple(_real(path) for path in (*_runnables(argv, env), *_shared(home))),
        protected=tuple(_real(path) for path in git_protected(workdir)),
        hidden=tuple(_real(Path(path)) for path in hidden if os.path.isdir(path)),
        masked=tuple(dict.fromkeys(_real(Path(p)) for p in ENGINE_SOCKETS if os.path.exists(p))),
        network=network,
        as_root=os.geteuid() == 0,
    )


def agent_writable(paths: Iterable[str], home: Path, env: Mapping[str, str]) -> list[Path]:
    """The paths an agent declared (``AgentSpec.sandbox_paths``), relative to ``home`` (if it
    exists), or to the path ``$VAR`` names in ``env`` (skipped when unset): a directory (``/``
    at its end: ``.codex/``, ``$CODEX_HOME/``) is created if missing, so what the agent keeps
    there outlives the run; a file (``$OPENCODE_CONFIG``) only if it exists (``*`` at its
    end matching names that start so)."""
    found: list[Path] = []
    for entry in paths:
        if entry.startswith("$"):
            name, _, rest = entry[1:].partition("/")
            if not env.get(name):
                continue
            base = Path(env[name]).expanduser()
            path = base / rest
        elif not home.is_dir():
            continue
        else:
            path = home / entry
        if entry.endswith("/"):
            found.append(_directory(path))
        elif entry.endswith("*"):
            found += sorted(path.parent.glob(path.name))
        elif path.exists():
            found.append(path)
    return found


def git_dirs(workdir: Path) -> list[Path]:
    """The git directories of the repository ``workdir`` is in, when they lie outside it: the
    ``.git`` of a repository whose top is above the work dir, or a worktree's own git dir and
    the repository's common one. The agent's git commands need them (read-write: a commit
    writes objects)."""
    for folder in (workdir, *workdir.parents):
        marker = folder / ".git"
        if marker.is_dir():
            return [] if folder == workdir else [marker]
        if marker.is_file():
            return _worktree_dirs(marker)
    return []


def git_protected(workdir: Path) -> list[Path]:
    """What of the work dir's repository stays read-only in the sandbox: its config (filter
    drivers, ``core.fsmonitor``, ``core.hooksPath`` run commands) and hooks of each git dir,
    the hooks dir made when missing so the agent cannot make it."""
    own = workdir / ".git"
    protected: list[Path] = []
    for git_dir in ([own] if own.is_dir() else []) + git_dirs(workdir):
        if not (git_dir / "config").is_file():  # a worktree's own git dir: its hooks are not run
            continue
        hooks = git_dir / "hooks"
        try:
            hooks.mkdir(exist_ok=True)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise SandboxUnavailable(f"--sandbox: cannot create {hooks}: {reason}") from exc
        protected += [git_dir / "config", hooks]
    return protected


def _worktree_dirs(marker: Path) -> list[Path]:
    """A ``.git`` file's git dir (``gitdir: PATH``) and the common dir it names."""
    try:
        text = marker.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return []
    if not text.startswith("gitdir:"):
        return []
    git_dir = (marker.parent / text.removeprefix("gitdir:").strip()).resolve()
    try:
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except (OSError, UnicodeDecodeError):
        return [git_dir] if git_dir.is_dir() else []
    return [path for path in (git_dir, common) if path.is_dir()]


def _directory(path: Path) -> Path:
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SandboxUnavailable(f"--sandbox: cannot create the agent's {path}: {reason}") from exc
    return path


def _runnables(argv: Sequence[str], env: Mapping[str, str]) -> list[Path]:
    """What the agent needs to start, wherever it lives: its executable's installation, the
    files its command line names (a script), ralphctl's managed installs, every ``PATH``
    directory (its runtime, e.g. ``node``) and the Python running ralphctl with ralphctl's own
    code (a same-session agent's Stop hook runs it; an editable install keeps the code outside
    the environment). Only those under the home or ``/tmp`` are bound (``agents/sandbox``);
    the rest of ``/`` is visible anyway."""
    found = [Path(sys.prefix), Path(sys.executable).parent, agents_home(), _ralphctl_root()]
    found += [Path(entry) for entry in env.get("PATH", "").split(os.pathsep) if entry]
    found += [Path(arg) for arg in argv[1:] if arg.startswith("/") and os.path.isfile(arg)]
    located = shutil.which(argv[0], path=env.get("PATH"))
    if located is not None:
        real = Path(os.path.realpath(located))
        found += [Path(located).parent, _installation(real), *_python_roots(real)]
    return [path for path in found if path.is_absolute() and path.exists()]


def _ralphctl_root() -> Path:
    """The directory ralphctl is imported from (``site-packages``, or an editable install's
    ``src``)."""
    import ralphctl

    return Path(ralphctl.__file__).resolve().parents[1]


def _shared(home: Path) -> list[Path]:
    return [home / name for name in SHARED_READ_ONLY if (home / name).exists()]


def _installation(real: Path) -> Path:
    """The directory holding an executable's installation: for a file inside an npm package,
    the prefix the package was installed into (its ``node_modules`` and their links), else
    the executable's directory."""
    parts = real.parts
    if "node_modules" in parts:
        return Path(*parts[: parts.index("node_modules")])
    return real.parent


def _python_roots(executable: Path) -> list[Path]:
    """For a script run by a virtual environment's Python (a PyPI-installed CLI such as
    Aider): the environment (its ``site-packages`` is beside ``bin``, not in it) and the
    installation of the Python it was made from (``home`` in its ``pyvenv.cfg``), which may
    live under the home too (pyenv, uv)."""
    try:
        with executable.open("rb") as handle:
            first = handle.readline(4096)
    except OSError:
        return []
    if not first.startswith(b"#!"):
        return []
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return []
    venv = Path(words[0]).parent.parent
    try:
        config = (venv / "pyvenv.cfg").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    roots = [venv]
    for line in config.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            roots.append(Path(os.path.realpath(value.strip())).parent)
    return roots


def _tools() -> tuple[str, str]:
    """The paths of bwrap and env; SandboxUnavailable naming the one missing."""
    bwrap = shutil.which(os.environ.get(BWRAP_ENV) or "bwrap")
    if bwrap is None:
        raise SandboxUnavailable(f"bwrap is not installed: {INSTALL_HINT}")
    env_tool = shutil.which("env")
    if env_tool is None:
        raise SandboxUnavailable("env (GNU coreutils) is not on PATH")
    return os.path.realpath(bwrap), env_tool


def _home(home: Path) -> PurePosixPath | None:
    return _real(home) if home.is_dir() else None


def _real(path: Path) -> PurePosixPath:
    return PurePosixPath(os.path.realpath(path))


def _namespaces_hint() -> str:
    """What may stop unprivileged namespaces here, as far as the kernel says."""
    for setting, off in (
        ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
        ("/proc/sys/user/max_user_namespaces", "0"),
        ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"),
    ):
        try:
            if Path(setting).read_text().strip() == off:
                return f"{setting} is {off}: user namespaces are turned off for unprivileged users"
        except OSError:
            continue
    return "in a container, run it with user namespaces allowed"
