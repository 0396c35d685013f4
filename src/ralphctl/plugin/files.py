"""File operations of the installer: atomic writes, settings files, empty folders."""

from __future__ import annotations

import contextlib
import json
import os
import uuid
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


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` by a fully written file with the same permissions, or leave it be."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with temporary.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def remove_if_empty(folder: Path) -> None:
    """Remove ``folder`` unless something is (still) in it."""
    with contextlib.suppress(OSError):  # not empty (the user put something there), or gone
        folder.rmdir()


def dump_json(data: object) -> str:
    """JSON as Claude Code writes its settings: two-space indent, UTF-8, final newline."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
