"""Installed workflows: one folder per name under the user data dir.

``$RALPHCTL_WORKFLOWS_DIR`` overrides the location (tests use it). A folder install copies
the whole folder except hidden entries and ``__pycache__``; a file install copies the file as
``workflow.json`` plus its tracker template file, if it names one. Installs are staged in a
hidden folder and renamed into place, so a failed install leaves nothing behind.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ralphctl.workflows.loader import (
    FILE_NAME,
    load_workflow,
    read_json,
    template_path,
    workflow_file,
)
from ralphctl.workflows.model import (
    NAME_PATTERN,
    Workflow,
    WorkflowError,
    check_name,
    tracker_file_reference,
)

ENV_VAR = "RALPHCTL_WORKFLOWS_DIR"
_SKIPPED = shutil.ignore_patterns(".*", "__pycache__")


@dataclass(frozen=True, slots=True)
class Installed:
    """A registry entry: its workflow, or why it does not load."""

    name: str
    path: Path
    workflow: Workflow | None
    error: str | None = None


def registry_root() -> Path:
    """Where installed workflows live."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        return Path(explicit).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("ralphctl")) / "workflows"


def resolve(name: str, root: Path | None = None) -> Workflow:
    """The installed workflow called ``name``, validated, its tracker template resolved."""
    folder = _installed_folder(name, root)
    workflow = load_workflow(folder / FILE_NAME)
    if workflow.name != name:
        raise WorkflowError(f"{folder}: holds a workflow named {workflow.name!r}, not {name!r}")
    return workflow


def show(name: str, root: Path | None = None) -> Installed:
    """``resolve`` plus where the workflow is installed."""
    workflow = resolve(name, root)
    return Installed(name, _installed_folder(name, root), workflow)


def list_installed(root: Path | None = None) -> list[Installed]:
    """Every entry, by name; entries that no longer load are listed with their error."""
    base = root or registry_root()
    if not base.is_dir():
        return []
    entries = []
    for folder in sorted(base.iterdir()):
        if not folder.is_dir() or not NAME_PATTERN.fullmatch(folder.name):
            continue  # staging folders are hidden; anything else is not ours
        try:
            entries.append(Installed(folder.name, folder, resolve(folder.name, base)))
        except WorkflowError as exc:
            entries.append(Installed(folder.name, folder, None, str(exc)))
    return entries


def install(source: Path, *, force: bool = False, root: Path | None = None) -> Installed:
    """Copy the workflow at ``source`` (a folder or a ``.json`` file) into the registry."""
    source = source.expanduser()
    file = workflow_file(source)
    workflow = load_workflow(file)
    base = root or registry_root()
    target = base / workflow.name
    if target.exists() and not force:
        raise WorkflowError(
            f"workflow {workflow.name!r} is already installed at {target}; "
            "pass --force to replace it"
        )
    base.mkdir(parents=True, exist_ok=True)
    with _staging(base, workflow.name) as staged:
        if source.is_dir():
            shutil.copytree(source, staged, ignore=_SKIPPED)
        else:
            _copy_single_file(file, staged)
        installed = load_workflow(staged / FILE_NAME)
        _replace(staged, target)
    return Installed(workflow.name, target, installed)


def remove(name: str, root: Path | None = None) -> Path:
    """Delete an installed workflow's folder; returns where it was."""
    folder = _installed_folder(name, root)
    shutil.rmtree(folder)
    return folder


def _installed_folder(name: str, root: Path | None) -> Path:
    folder = (root or registry_root()) / check_name(name)
    if not (folder / FILE_NAME).is_file():
        raise WorkflowError(
            f"no workflow named {name!r} is installed (see `ralphctl workflow list`)"
        )
    return folder


def _copy_single_file(file: Path, staged: Path) -> None:
    staged.mkdir()
    shutil.copyfile(file, staged / FILE_NAME)
    reference = tracker_file_reference(read_json(file))
    if reference is not None:
        destination = template_path(staged, reference)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template_path(file.parent, reference), destination)


@contextmanager
def _staging(base: Path, name: str) -> Iterator[Path]:
    """A hidden scratch path next to the target; removed if it is still there at the end."""
    staged = base / f".{name}.installing-{uuid.uuid4().hex[:8]}"
    try:
        yield staged
    finally:
        if staged.exists():
            shutil.rmtree(staged)


def _replace(staged: Path, target: Path) -> None:
    """Move ``staged`` to ``target``; an existing target is moved aside first, then deleted."""
    if not target.exists():
        staged.rename(target)
        return
    old = target.with_name(f".{target.name}.replaced-{uuid.uuid4().hex[:8]}")
    target.rename(old)
    staged.rename(target)
    shutil.rmtree(old)
