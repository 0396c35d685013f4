"""The record of one installation: every file, folder and settings edit ralphctl made.

Uninstall undoes exactly this record, so nothing ralphctl did not create is ever removed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralphctl.plugin.jsonedit import Edit

FORMAT = 1


class ManifestError(ValueError):
    """An unreadable installation record."""


@dataclass(frozen=True, slots=True)
class SettingsChange:
    """The edits made to one settings file, and whether ralphctl created that file."""

    file: Path
    created_file: bool
    edits: tuple[Edit, ...]


@dataclass(frozen=True, slots=True)
class Manifest:
    scope: str
    version: str
    interpreter: str
    files: tuple[Path, ...]
    directories: tuple[Path, ...]  # created by ralphctl, parents first
    settings: tuple[SettingsChange, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "scope": self.scope,
            "version": self.version,
            "interpreter": self.interpreter,
            "files": [str(path) for path in self.files],
            "directories": [str(path) for path in self.directories],
            "settings": [
                {
                    "file": str(change.file),
                    "created_file": change.created_file,
                    "edits": [edit.to_json() for edit in change.edits],
                }
                for change in self.settings
            ],
        }

    @classmethod
    def from_json(cls, data: Any) -> Manifest:
        try:
            if data["format"] != FORMAT:
                raise ManifestError(f"unknown format {data['format']!r}")
            return cls(
                scope=str(data["scope"]),
                version=str(data["version"]),
                interpreter=str(data["interpreter"]),
                files=tuple(Path(path) for path in data["files"]),
                directories=tuple(Path(path) for path in data["directories"]),
                settings=tuple(
                    SettingsChange(
                        Path(change["file"]),
                        bool(change["created_file"]),
                        tuple(Edit.from_json(edit) for edit in change["edits"]),
                    )
                    for change in data["settings"]
                ),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifestError(f"malformed installation record ({exc!r})") from None


def read_manifest(path: Path) -> Manifest | None:
    """The record at ``path``; None when nothing is installed there."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        return Manifest.from_json(json.loads(text))
    except (ManifestError, json.JSONDecodeError) as exc:
        raise ManifestError(f"{path}: {exc}") from None
