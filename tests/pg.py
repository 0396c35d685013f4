"""A throwaway PostgreSQL server for the test session, from the machine's server binaries.

The binaries (``initdb``, ``pg_ctl`` and the ``postgres`` it starts, in one directory) are
looked for in ``$RALPHCTL_PG_BIN``, then on PATH, then in Debian's
``/usr/lib/postgresql/<version>/bin``. PostgreSQL refuses to run as root, so as root the
server runs as the ``postgres`` user, through ``runuser`` found on PATH or, as root's PATH may
lack them, in the system's sbin and bin directories. ``scripts/ensure-postgres`` looks in the
same places and installs what is missing.

Whatever fails while the server is set up or runs, it is stopped and its directory removed.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import psycopg

USER = "ralphctl"
RUN_AS = "postgres"
SERVER_TOOLS = ("initdb", "pg_ctl", "postgres")
SYSTEM_DIRS = (Path("/usr/sbin"), Path("/sbin"), Path("/usr/bin"), Path("/bin"))


def find_bin_dir() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, or None when none does."""
    candidates: list[Path] = []
    if configured := os.environ.get("RALPHCTL_PG_BIN"):
        candidates.append(Path(configured))
    if on_path := shutil.which("initdb"):
        candidates.append(Path(on_path).resolve().parent)
    debian = Path("/usr/lib/postgresql").glob("*/bin")
    candidates += sorted(debian, key=lambda p: _version_key(p.parent.name), reverse=True)
    for directory in candidates:
        if all(_is_executable(directory / tool) for tool in SERVER_TOOLS):
            return directory
    return None


def find_runuser() -> Path | None:
    """``runuser``'s absolute path: on PATH, else in the system's sbin and bin directories."""
    if on_path := shutil.which("runuser"):
        return Path(on_path)
    return next((d / "runuser" for d in SYSTEM_DIRS if _is_executable(d / "runuser")), None)


@dataclass(frozen=True)
class _Cluster:
    """How to run the server's tools on one data directory (as ``as_user``, if given)."""

    bin_dir: Path
    data: Path
    as_user: tuple[str, ...]

    def command(self, tool: str, *args: str) -> list[str]:
        return [*self.as_user, str(self.bin_dir / tool), "-D", str(self.data), *args]


@contextmanager
def postgres_server(bin_dir: Path) -> Iterator[str]:
    """Run a fresh server on a free 127.0.0.1 port; yields the URL of its ``postgres`` DB."""
    root = Path(tempfile.mkdtemp(prefix="ralphctl-pg-"))
    try:
        cluster = _Cluster(bin_dir, root / "data", tuple(_unprivileged_prefix(root)))
        try:
            yield _start(cluster, root)
        finally:
            if (cluster.data / "postmaster.pid").exists():
                stop = cluster.command("pg_ctl", "-m", "immediate", "-w", "-t", "30", "stop")
                subprocess.run(stop, cwd=root, capture_output=True, check=False)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def create_schema(server_url: str, name: str) -> str:
    """Create schema ``name`` (far cheaper than a database); returns a URL whose sessions use it."""
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    return f"{server_url}?options=-csearch_path%3D{name}"


def _start(cluster: _Cluster, root: Path) -> str:
    """initdb and start the server; the URL of its ``postgres`` database."""
    log = root / "server.log"
    port = _free_port()
    options = (
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        " -c synchronous_commit=off -c full_page_writes=off"
    )
    try:
        _run(
            cluster.command(
                "initdb", "-U", USER, "-A", "trust", "--no-sync", "-E", "UTF8", "--no-locale"
            ),
            root,
        )
        _run(
            cluster.command("pg_ctl", "-l", str(log), "-o", options, "-w", "-t", "60", "start"),
            root,
        )
    except RuntimeError as exc:
        server_log = ""
        with suppress(OSError):
            server_log = log.read_text(errors="replace")
        raise RuntimeError(f"{exc}\n{server_log}") from None
    return f"postgresql://{USER}@127.0.0.1:{port}/postgres"


def _unprivileged_prefix(root: Path) -> list[str]:
    """As root: hand ``root`` to the postgres user and return the command prefix to become it."""
    if os.geteuid() != 0:
        return []
    try:
        user = pwd.getpwnam(RUN_AS)
    except KeyError:
        raise RuntimeError(
            f"running as root, but there is no {RUN_AS!r} user to run PostgreSQL as"
            " (scripts/ensure-postgres installs the package that creates it)"
        ) from None
    runuser = find_runuser()
    if runuser is None:
        places = ", ".join(str(d) for d in SYSTEM_DIRS)
        raise RuntimeError(
            f"running as root, but runuser (util-linux), needed to run PostgreSQL as {RUN_AS!r},"
            f" is neither on PATH nor in {places}"
        )
    os.chown(root, user.pw_uid, user.pw_gid)
    return [str(runuser), "-u", RUN_AS, "--"]


def _run(command: list[str], cwd: Path) -> None:
    try:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise RuntimeError(f"{' '.join(command)} could not start: {exc}") from None
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())
