"""Small helpers every command shares: consoles, errors, the store."""

from __future__ import annotations

import json
import os
import sys
from functools import cache
from typing import TYPE_CHECKING, Any, NoReturn

from ralphctl.domain.money import round_costs

if TYPE_CHECKING:
    from rich.console import Console

    from ralphctl.store.repository import Store

PIPED_WIDTH = 160


@cache
def get_console(stderr: bool = False) -> Console:
    """The console of stdout (or stderr), made on first use: importing rich would cost
    ``ralphctl run`` tens of ms before its first agent starts (start-up budget). Not squeezed
    to 80 columns when piped."""
    from rich.console import Console

    probe = Console(stderr=stderr)
    wide = not probe.is_terminal and "COLUMNS" not in os.environ
    return Console(stderr=stderr, highlight=False, width=PIPED_WIDTH if wide else None)


def __getattr__(name: str) -> Console:
    """``console`` and ``err_console``: ``get_console()`` and ``get_console(stderr=True)``."""
    if name == "console":
        return get_console()
    if name == "err_console":
        return get_console(stderr=True)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class UsageError(ValueError):
    """Bad arguments; reported with exit code 2."""


def fail(message: str, code: int) -> NoReturn:
    from rich.markup import escape

    get_console(stderr=True).print(f"[bold red]error:[/] {escape(message)}")
    sys.exit(code)


def print_json(data: Any) -> None:
    """Print ``data`` as every ``--json`` does: costs rounded to a millionth of a dollar."""
    get_console().print_json(json.dumps(round_costs(data)))


def open_store(db: str | None) -> Store:
    """Open the store lazily so that `--help` and `--dry-run` never touch a database."""
    from ralphctl.store.repository import Store

    return Store.open(db)
