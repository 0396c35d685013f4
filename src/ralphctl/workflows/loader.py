"""Read a ``workflow.json`` from disk, with its tracker template file, into a ``Workflow``."""

from __future__ import annotations

import json
from pathlib import Path

from ralphctl.workflows.model import Workflow, WorkflowError, parse_workflow

FILE_NAME = "workflow.json"


def workflow_file(source: Path) -> Path:
    """``source`` itself if it is a file, else the ``workflow.json`` inside the folder."""
    if source.is_dir():
        inside = source / FILE_NAME
        if not inside.is_file():
            raise WorkflowError(f"{source}: no {FILE_NAME} in this folder")
        return inside
    if not source.is_file():
        raise WorkflowError(f"{source}: no such file or folder")
    return source


def read_json(path: Path) -> object:
    """Decode a JSON file; every failure becomes a WorkflowError naming the file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise WorkflowError(f"{path}: invalid JSON: {exc}") from None
    except UnicodeDecodeError:
        raise WorkflowError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise WorkflowError(f"{path}: cannot read it ({exc.strerror})") from None


def template_path(folder: Path, reference: str) -> Path:
    """Where a tracker template reference points; it must stay inside the workflow folder."""
    candidate = Path(reference)
    inside = (folder / candidate).resolve()
    if candidate.is_absolute() or not inside.is_relative_to(folder.resolve()):
        raise WorkflowError(
            f"loop.trackerTemplate: {reference!r} must be a path inside the workflow folder"
        )
    return folder / candidate


def load_workflow(path: Path) -> Workflow:
    """Load and validate the workflow at ``path`` (a ``workflow.json`` or its folder)."""
    file = workflow_file(path)
    folder = file.parent

    def read_template(reference: str) -> str:
        try:
            target = template_path(folder, reference)
        except WorkflowError as exc:
            raise WorkflowError(f"{file}: {exc}") from None
        if not target.is_file():
            raise WorkflowError(
                f"{file}: loop.trackerTemplate: file {reference!r} not found (looked at {target})"
            )
        try:
            return target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise WorkflowError(f"{target}: cannot read the tracker template ({exc})") from None

    return parse_workflow(read_json(file), str(file), read_template)
