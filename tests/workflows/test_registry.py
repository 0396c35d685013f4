"""The registry: install, list, show, remove and resolve workflows by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralphctl.workflows import registry, resolve
from ralphctl.workflows.model import WorkflowError
from tests.workflows.conftest import tree, write_workflow


def test_the_registry_lives_in_the_user_data_dir_unless_overridden(monkeypatch, tmp_path):
    monkeypatch.delenv("RALPHCTL_WORKFLOWS_DIR", raising=False)
    assert registry.registry_root().parts[-2:] == ("ralphctl", "workflows")
    monkeypatch.setenv("RALPHCTL_WORKFLOWS_DIR", str(tmp_path))
    assert registry.registry_root() == tmp_path


def test_installing_a_folder_copies_it_under_the_workflows_name(tmp_path, registry_dir):
    source = write_workflow(tmp_path / "src" / "any-folder-name", name="e2e", tracker="# T\n")
    (source / "notes.txt").write_text("kept")
    entry = registry.install(source)
    assert entry.name == "e2e"
    assert entry.path == registry_dir / "e2e"
    assert tree(registry_dir) == {
        "e2e/notes.txt": "kept",
        "e2e/tracker.md": "# T\n",
        "e2e/workflow.json": (source / "workflow.json").read_text(),
    }


def test_hidden_entries_and_caches_are_not_copied(tmp_path, registry_dir):
    source = write_workflow(tmp_path / "w")
    (source / ".git").mkdir()
    (source / ".git" / "HEAD").write_text("ref")
    (source / "__pycache__").mkdir()
    (source / "__pycache__" / "x.pyc").write_text("")
    registry.install(source)
    assert set(tree(registry_dir)) == {"w/workflow.json"}


def test_installing_a_single_file_copies_it_and_its_tracker_template(tmp_path, registry_dir):
    source = write_workflow(tmp_path / "w", tracker="# From file")
    (source / "unrelated.txt").write_text("not copied")
    custom = source / "my-workflow.json"
    (source / "workflow.json").rename(custom)
    registry.install(custom)
    assert tree(registry_dir) == {
        "w/tracker.md": "# From file",
        "w/workflow.json": custom.read_text(),
    }
    assert resolve("w").loop.tracker_template == "# From file"


def test_an_installed_workflow_resolves_by_name(tmp_path, registry_dir):
    registry.install(write_workflow(tmp_path / "fix", tracker="# Fix list"))
    workflow = resolve("fix")
    assert workflow.name == "fix"
    assert workflow.render_prompt("the tests") == "Do the tests"
    assert workflow.loop.tracker_template == "# Fix list"


def test_an_invalid_workflow_is_not_installed(tmp_path, registry_dir):
    source = write_workflow(tmp_path / "w", loop={"maxIterations": 0})
    with pytest.raises(WorkflowError, match=r"loop\.maxIterations"):
        registry.install(source)
    assert not registry_dir.exists() or tree(registry_dir) == {}


def test_a_workflow_whose_tracker_file_is_missing_is_not_installed(tmp_path, registry_dir):
    source = write_workflow(tmp_path / "w", loop={"trackerTemplate": "gone.md"})
    with pytest.raises(WorkflowError, match=r"file \'gone\.md\' not found"):
        registry.install(source)


def test_an_installed_workflow_is_not_overwritten_without_force(tmp_path, registry_dir):
    registry.install(write_workflow(tmp_path / "a" / "w", description="first"))
    second = write_workflow(tmp_path / "b" / "w", description="second")
    with pytest.raises(WorkflowError, match=r"already installed .* pass --force to replace it"):
        registry.install(second)
    assert resolve("w").description == "first"


def test_force_replaces_the_whole_folder(tmp_path, registry_dir):
    registry.install(write_workflow(tmp_path / "a" / "w", tracker="# Old"))
    registry.install(write_workflow(tmp_path / "b" / "w", description="new"), force=True)
    assert resolve("w").description == "new"
    assert set(tree(registry_dir)) == {"w/workflow.json"}  # no stale tracker, no staging


def test_workflow_names_with_path_tricks_are_refused_before_touching_disk(tmp_path, registry_dir):
    source = tmp_path / "evil"
    source.mkdir()
    (source / "workflow.json").write_text(
        json.dumps({"name": "../evil", "promptTemplate": "{input}"})
    )
    with pytest.raises(WorkflowError, match=r"name: \'\.\./evil\'"):
        registry.install(source)
    assert not registry_dir.exists()


@pytest.mark.parametrize("name", ["..", "../x", "/etc", ".hidden", "a/b", "UPPER"])
def test_looking_up_a_name_with_path_tricks_is_refused(registry_dir, name):
    for operation in (registry.resolve, registry.show, registry.remove):
        with pytest.raises(WorkflowError, match="invalid workflow name"):
            operation(name)


def test_list_shows_installed_workflows_by_name_and_flags_broken_ones(tmp_path, registry_dir):
    registry.install(write_workflow(tmp_path / "zeta"))
    registry.install(write_workflow(tmp_path / "alpha"))
    registry.install(write_workflow(tmp_path / "broken"))
    (registry_dir / "broken" / "workflow.json").write_text("{")
    (registry_dir / ".alpha.installing-1234").mkdir()  # an interrupted install
    entries = registry.list_installed()
    assert [entry.name for entry in entries] == ["alpha", "broken", "zeta"]
    assert entries[0].workflow is not None
    assert entries[1].workflow is None
    assert "invalid JSON" in (entries[1].error or "")


def test_list_of_an_empty_or_missing_registry_is_empty(registry_dir):
    assert registry.list_installed() == []


def test_show_gives_the_workflow_and_where_it_is(tmp_path, registry_dir):
    registry.install(write_workflow(tmp_path / "w"))
    entry = registry.show("w")
    assert entry.path == registry_dir / "w"
    assert entry.workflow == resolve("w")


def test_remove_deletes_only_that_workflow(tmp_path, registry_dir):
    registry.install(write_workflow(tmp_path / "a"))
    registry.install(write_workflow(tmp_path / "b"))
    assert registry.remove("a") == registry_dir / "a"
    assert [entry.name for entry in registry.list_installed()] == ["b"]


def test_unknown_names_are_clear_errors(registry_dir):
    for operation in (registry.resolve, registry.show, registry.remove):
        with pytest.raises(WorkflowError, match="no workflow named 'nope' is installed"):
            operation("nope")


def test_a_folder_renamed_by_hand_does_not_resolve_under_the_wrong_name(tmp_path, registry_dir):
    registry.install(write_workflow(tmp_path / "right"))
    (registry_dir / "right").rename(registry_dir / "wrong")
    with pytest.raises(WorkflowError, match="holds a workflow named 'right', not 'wrong'"):
        resolve("wrong")


def test_a_failed_copy_leaves_no_staging_folder(tmp_path, registry_dir, monkeypatch):
    source = write_workflow(tmp_path / "w")

    def broken_copy(*args: object, **kwargs: object) -> None:
        Path(str(args[1])).mkdir()
        raise OSError("disk full")

    monkeypatch.setattr("shutil.copytree", broken_copy)
    with pytest.raises(OSError, match="disk full"):
        registry.install(source)
    assert list(registry_dir.iterdir()) == []
