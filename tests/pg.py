"""A throwaway PostgreSQL server for the test session, from the machine's server binaries.

The binaries are looked for in ``$RALPHCTL_PG_BIN``, then on PATH, then in Debian's
``/usr/lib/postgresql/<version>/bin`` (``scripts/ensure-postgres`` installs them). PostgreSQL
refuses to run as root, so as root the server runs as the ``postgres`` user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

USER = "ralphctl"
RUN_AS = "postgres"


def find_bin_dir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or None when there is none."""
    candidates: list[Path] = []
    if configured := os.environ.get("RALPHCTL_PG_BIN"):
        candidates.append(Path(configured))
    if on_path := shutil.which("initdb"):
        candidates.append(Path(on_path).resolve().parent)
    debian = Path("/usr/lib/postgresql").glob("*/bin")
    candidates += sorted(debian, key=lambda p: _version_key(p.parent.name), reverse=True)
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "pg_ctl").is_file():
            return directory
    return None


@contextmanager
def postgres_server(bin_dir: Path) -> Iterator[str]:
    """Run a fresh server on a free 127.0.0.1 port; yields the URL of its ``postgres`` DB."""
    root = Path(tempfile.mkdtemp(prefix="ralphctl-pg-"))
    data, log = root / "data", root / "server.log"
    as_user = _unprivileged_prefix(root)
    port = _free_port()
    options = (
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        " -c synchronous_commit=off -c full_page_writes=off"
    )

    def command(tool: str, *args: str) -> list[str]:
        return [*as_user, str(bin_dir / tool), "-D", str(data), *args]

    try:
        _run(
            command("initdb", "-U", USER, "-A", "trust", "--no-sync", "-E", "UTF8", "--no-locale"),
            root,
        )
        _run(command("pg_ctl", "-l", str(log), "-o", options, "-w", "-t", "60", "start"), root)
    except RuntimeError as exc:
        server_log = log.read_text(errors="replace") if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"{exc}\n{server_log}") from None
    try:
        yield f"postgresql://{USER}@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            command("pg_ctl", "-m", "immediate", "stop"),
            cwd=root,
            capture_output=True,
            check=False,
        )
        shutil.rmtree(root, ignore_errors=True)


def create_schema(server_url: str, name: str) -> str:
    """Create schema ``name`` (far cheaper than a database); returns a URL whose sessions use it."""
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    return f"{server_url}?options=-csearch_path%3D{name}"


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
    os.chown(root, user.pw_uid, user.pw_gid)
    return ["runuser", "-u", RUN_AS, "--"]


def _run(command: list[str], cwd: Path) -> None:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())
