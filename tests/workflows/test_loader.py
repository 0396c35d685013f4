"""Loading workflow.json from disk: tracker template inline, from a file, or missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralphctl.workflows.loader import load_workflow
from ralphctl.workflows.model import DEFAULT_TRACKER_TEMPLATE, WorkflowError
from tests.workflows.conftest import write_workflow


def test_a_folder_or_its_workflow_json_load_the_same_workflow(tmp_path):
    folder = write_workflow(tmp_path / "fix-tests")
    assert load_workflow(folder) == load_workflow(folder / "workflow.json")


def test_an_inline_tracker_template_is_used_as_written(tmp_path):
    folder = write_workflow(tmp_path / "w", loop={"trackerTemplate": "# Todo\n- [ ] a"})
    assert load_workflow(folder).loop.tracker_template == "# Todo\n- [ ] a"


def test_without_a_tracker_template_the_default_is_used(tmp_path):
    folder = write_workflow(tmp_path / "w")
    assert load_workflow(folder).loop.tracker_template == DEFAULT_TRACKER_TEMPLATE


def test_a_tracker_template_file_is_read_relative_to_workflow_json(tmp_path):
    folder = write_workflow(tmp_path / "w", tracker="# Checklist\n- [ ] login\n")
    assert load_workflow(folder).loop.tracker_template == "# Checklist\n- [ ] login\n"


def test_a_tracker_template_in_a_subfolder_is_found(tmp_path):
    folder = write_workflow(tmp_path / "w", loop={"trackerTemplate": "templates/t.md"})
    (folder / "templates").mkdir()
    (folder / "templates" / "t.md").write_text("# Nested")
    assert load_workflow(folder).loop.tracker_template == "# Nested"


def test_a_missing_tracker_template_file_is_a_clear_error(tmp_path):
    folder = write_workflow(tmp_path / "w", loop={"trackerTemplate": "tracker.md"})
    with pytest.raises(WorkflowError) as caught:
        load_workflow(folder)
    assert str(caught.value) == (
        f"{folder / 'workflow.json'}: loop.trackerTemplate: file 'tracker.md' not found"
        f" (looked at {folder / 'tracker.md'})"
    )


@pytest.mark.parametrize("reference", ["../outside.md", "/etc/motd.md", "a/../../outside.md"])
def test_a_tracker_template_outside_the_workflow_folder_is_refused(tmp_path, reference):
    (tmp_path / "outside.md").write_text("# Outside")
    folder = write_workflow(tmp_path / "w", loop={"trackerTemplate": reference})
    with pytest.raises(WorkflowError, match="must be a path inside the workflow folder"):
        load_workflow(folder)


def test_an_empty_tracker_template_file_is_an_error(tmp_path):
    folder = write_workflow(tmp_path / "w", tracker="  \n")
    with pytest.raises(WorkflowError, match=r"loop\.trackerTemplate: must not be empty"):
        load_workflow(folder)


def test_invalid_json_names_the_file_and_the_position(tmp_path):
    (tmp_path / "workflow.json").write_text('{"name": "x",}')
    with pytest.raises(WorkflowError, match=r"workflow\.json: invalid JSON: .*line 1 column 14"):
        load_workflow(tmp_path)


def test_a_folder_without_workflow_json_is_an_error(tmp_path):
    with pytest.raises(WorkflowError, match=r"no workflow\.json in this folder"):
        load_workflow(tmp_path)


def test_a_missing_path_is_an_error(tmp_path):
    with pytest.raises(WorkflowError, match="no such file or folder"):
        load_workflow(tmp_path / "nowhere")


def test_a_file_that_is_not_utf8_is_an_error(tmp_path):
    (tmp_path / "workflow.json").write_bytes(b'{"name": "\xff"}')
    with pytest.raises(WorkflowError, match="not UTF-8 text"):
        load_workflow(Path(tmp_path))


def test_validation_errors_name_the_file(tmp_path):
    (tmp_path / "workflow.json").write_text(json.dumps({"name": "x"}))
    with pytest.raises(WorkflowError, match=r"workflow\.json: invalid workflow:\n  promptTemplate"):
        load_workflow(tmp_path)
