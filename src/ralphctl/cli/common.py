"""Small helpers every command shares: consoles, errors, the store."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from rich.console import Console
from rich.markup import escape

from ralphctl.domain.money import round_costs

if TYPE_CHECKING:
    from ralphctl.store.repository import Store


def _console(stderr: bool = False) -> Console:
    """A console that does not squeeze tables to 80 columns when piped."""
    probe = Console(stderr=stderr)
    wide = not probe.is_terminal and "COLUMNS" not in os.environ
    return Console(stderr=stderr, highlight=False, width=PIPED_WIDTH if wide else None)


PIPED_WIDTH = 160
console = _console()
err_console = _console(stderr=True)


class UsageError(ValueError):
    """Bad arguments; reported with exit code 2."""


def fail(message: str, code: int) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {escape(message)}")
    sys.exit(code)


def print_json(data: Any) -> None:
    """Print ``data`` as every ``--json`` does: costs rounded to a millionth of a dollar."""
    console.print_json(json.dumps(round_costs(data)))


def open_store(db: str | None) -> Store:
    """Open the store lazily so that `--help` and `--dry-run` never touch a database."""
    from ralphctl.store.repository import Store

    return Store.open(db)
