"""Install and uninstall a plan, keeping a manifest so that uninstall reverts exactly.

Everything is decided before anything is written: a malformed settings file or a file ralphctl
did not create standing in the way is an error, and then nothing changes. Installing again
replaces the previous installation (its settings edits are reverted first, so nothing is
added twice). Writes are atomic and keep a file's permissions (``ralphctl.plugin.files``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ralphctl.atomic import write_atomic
from ralphctl.plugin.files import FileError, dump_json, read_settings, remove_if_empty
from ralphctl.plugin.jsonedit import SettingsError, append_item, revert, set_key
from ralphctl.plugin.manifest import Manifest, ManifestError, SettingsChange, read_manifest
from ralphctl.plugin.scopes import Plan, Registration


class InstallError(ValueError):
    """Installing or uninstalling cannot go ahead; nothing was changed."""


@dataclass(frozen=True, slots=True)
class _SettingsWrite:
    file: Path
    document: dict[str, Any]
    created_file: bool


def install(plan: Plan, *, exclusive_with: Sequence[Plan] = ()) -> Manifest:
    """Write the plan's files and settings edits; returns the new manifest.

    Refused while one of ``exclusive_with`` is installed: the CLIs run the hooks of every
    settings layer (Claude Code a plugin's Stop hook and an identical settings hook both), so
    one stop would count twice.
    """
    for other in exclusive_with:
        if _manifest(other.manifest) is not None:
            agent = "" if other.agent == "claude" else f" --agent {other.agent}"
            raise InstallError(
                f"ralphctl is already installed at {other.scope} scope ({other.manifest.parent}),"
                " whose Stop hook would run alongside this one and count every stop twice:"
                f" use it, or run `ralphctl plugin uninstall{agent} --scope {other.scope}` first"
            )
    old = _manifest(plan.manifest)
    owned = set(old.files) if old else set()
    for path in plan.files:
        if path.exists() and path not in owned:
            raise InstallError(
                f"{path} already exists and was not written by ralphctl: move it away first"
            )
    writes, changes = _settings_plan(plan, old)
    records = [_registered(registration) for registration in plan.registrations]
    record_files = [registration.file for registration in plan.registrations]
    new_dirs = _missing_dirs([*plan.files, *plan.settings, *record_files, plan.manifest])
    manifest = Manifest(
        scope=str(plan.scope),
        version=plan.version,
        interpreter=plan.interpreter.python,
        files=tuple(plan.files),
        directories=tuple(dict.fromkeys([*(old.directories if old else ()), *new_dirs])),
        settings=tuple(changes),
    )
    for folder in new_dirs:
        folder.mkdir()
    write_atomic(plan.manifest, dump_json(manifest.to_json()))
    for path, text in plan.files.items():
        write_atomic(path, text)
    for write in writes:
        _save_settings(write)
    for file, document in zip(record_files, records, strict=True):
        if document is not None:
            write_atomic(file, dump_json(document))
    for stale in owned - set(plan.files):
        stale.unlink(missing_ok=True)
    return manifest


def uninstall(plan: Plan) -> Manifest | None:
    """Revert the installation of ``plan``'s scope, as its manifest records it; None if
    nothing is installed there."""
    manifest_path = plan.manifest
    manifest = _manifest(manifest_path)
    if manifest is None:
        return None
    writes = [
        _SettingsWrite(change.file, _reverted(_settings(change.file), change), change.created_file)
        for change in manifest.settings
        if change.file.exists()
    ]
    for write in writes:
        _save_settings(write)
    for path in manifest.files:
        path.unlink(missing_ok=True)
    manifest_path.unlink()
    for registration in plan.registrations:
        _forget(registration)
    for folder in reversed(manifest.directories):
        remove_if_empty(folder)
    return manifest


def installed(manifest_path: Path) -> Manifest | None:
    """The installation recorded at ``manifest_path``, if any."""
    return _manifest(manifest_path)


# -- helpers --------------------------------------------------------------------------------


def _settings_plan(
    plan: Plan, old: Manifest | None
) -> tuple[list[_SettingsWrite], list[SettingsChange]]:
    """Each settings file's new document (the old installation's edits reverted, the plan's
    applied) and the record of what was applied."""
    previous = {change.file: change for change in old.settings} if old else {}
    writes, changes = [], []
    for file in dict.fromkeys([*plan.settings, *previous]):
        document = _reverted(_settings(file), previous.get(file))
        edits = []
        for wanted in plan.settings.get(file, []):
            apply = append_item if wanted.append else set_key
            try:
                document, edit = apply(document, wanted.path, wanted.value)
            except SettingsError as exc:
                raise InstallError(f"{file}: {exc}") from None
            edits.append(edit)
        created = previous[file].created_file if file in previous else not file.exists()
        writes.append(_SettingsWrite(file, document, created))
        if edits:
            changes.append(SettingsChange(file, created, tuple(edits)))
    return writes, changes


def _manifest(path: Path) -> Manifest | None:
    try:
        return read_manifest(path)
    except ManifestError as exc:
        raise InstallError(f"{exc}; remove it and what it lists by hand") from None


def _settings(file: Path) -> dict[str, Any]:
    try:
        return read_settings(file)
    except FileError as exc:
        raise InstallError(str(exc)) from None


def _reverted(document: dict[str, Any], change: SettingsChange | None) -> dict[str, Any]:
    for edit in reversed(change.edits if change else ()):
        document = revert(document, edit)
    return document


def _save_settings(write: _SettingsWrite) -> None:
    """Write the document; a file ralphctl created and that is now empty is removed."""
    if write.created_file and not write.document:
        write.file.unlink(missing_ok=True)
    else:
        write_atomic(write.file, dump_json(write.document))


def _missing_dirs(paths: Iterable[Path]) -> list[Path]:
    """The folders that must be created for ``paths``, parents first."""
    missing: dict[Path, None] = {}
    for path in paths:
        chain = []
        folder = path.parent
        while not folder.exists() and folder not in missing:
            chain.append(folder)
            folder = folder.parent
        missing.update(dict.fromkeys(reversed(chain)))
    return list(missing)


def registered(registration: Registration) -> bool:
    """Whether Claude Code's record holds the entry, still naming ralphctl's path."""
    return _registered_document(registration) is not None


def _registered(registration: Registration) -> dict[str, Any] | None:
    """Claude Code's record with the entry added, as the CLI writes it; None when it is
    there already (a reinstall changes nothing)."""
    try:
        document = read_settings(registration.file)
    except FileError as exc:
        raise InstallError(str(exc)) from None
    if _names_source(document, registration):
        return None
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    source = {"source": "directory", "path": registration.source_path}
    entry = {"source": source, "installLocation": registration.source_path, "lastUpdated": now}
    return {**document, registration.key: entry}


def _registered_document(registration: Registration) -> dict[str, Any] | None:
    try:
        document = json.loads(registration.file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if _names_source(document, registration) else None


def _names_source(document: object, registration: Registration) -> bool:
    try:
        path: object = document[registration.key]["source"]["path"]  # type: ignore[index]
    except (KeyError, TypeError):
        return False
    return path == registration.source_path


def _forget(registration: Registration) -> None:
    """Best effort: Claude Code's file is left alone if it is unreadable or changed; a record
    left empty is removed (Claude Code writes a new one when it needs it)."""
    document = _registered_document(registration)
    if document is None:
        return
    del document[registration.key]
    if document:
        write_atomic(registration.file, dump_json(document))
    else:
        registration.file.unlink(missing_ok=True)
