"""Where a server keeps its token and address, so that the CLI can find and call it.

Stdlib only: the CLI imports this on every ``ralphctl loops`` command.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ralphctl.atomic import write_atomic

TOKEN_FILE = "server-token"
ADDRESS_FILE = "server.json"


@dataclass(frozen=True, slots=True)
class Address:
    """A running server: its base URL and process id."""

    url: str
    pid: int


def server_dir() -> Path:
    """The user config dir, or ``RALPHCTL_SERVER_DIR`` when set (tests, several servers)."""
    explicit = os.environ.get("RALPHCTL_SERVER_DIR")
    if explicit:
        return Path(explicit)
    from platformdirs import user_config_dir

    return Path(user_config_dir("ralphctl"))


def read_token(directory: Path) -> str | None:
    """The stored token (its file's mode tightened to 0600 if looser), or None when absent."""
    path = directory / TOKEN_FILE
    try:
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            path.chmod(0o600)
        return path.read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None


def write_address(directory: Path, address: Address) -> None:
    write_private(directory / ADDRESS_FILE, json.dumps({"url": address.url, "pid": address.pid}))


def read_address(directory: Path) -> Address | None:
    """The address a server left, or None when there is none or it is unreadable."""
    try:
        data = json.loads((directory / ADDRESS_FILE).read_text(encoding="utf-8"))
        return Address(str(data["url"]), int(data["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_address(directory: Path, pid: int) -> None:
    """Remove the address file if it is still this process's (another server may own it)."""
    address = read_address(directory)
    if address is not None and address.pid == pid:
        with contextlib.suppress(FileNotFoundError):
            (directory / ADDRESS_FILE).unlink()


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` atomically with ``text``; nobody but the owner can ever read it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text, mode=0o600)
