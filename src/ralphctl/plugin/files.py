"""File operations of the installer: settings files, empty folders (atomic writes are
``ralphctl.atomic``'s)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any


class FileError(ValueError):
    """A file the installer cannot use as it is; the message names it."""


def read_settings(file: Path) -> dict[str, Any]:
    """A settings file's JSON object; ``{}`` when there is no file."""
    if not file.exists():
        return {}
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise FileError(f"{file}: not valid JSON ({exc}); fix it, then run again") from None
    except OSError as exc:
        raise FileError(f"{file}: cannot read it ({exc.strerror})") from None
    if not isinstance(document, dict):
        raise FileError(f"{file}: settings must be a JSON object")
    return document


def remove_if_empty(folder: Path) -> None:
    """Remove ``folder`` unless something is (still) in it."""
    with contextlib.suppress(OSError):  # not empty (the user put something there), or gone
        folder.rmdir()


def dump_json(data: object) -> str:
    """JSON as Claude Code writes its settings: two-space indent, UTF-8, final newline."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
