"""`ralphctl workflow …` as a user types it: output and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ralphctl.cli.workflow import app
from ralphctl.workflows import resolve
from tests.workflows.conftest import write_workflow

runner = CliRunner()


def workflow(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def test_install_list_show_remove_round_trip(tmp_path, registry_dir):
    source = write_workflow(tmp_path / "e2e", tracker="# Checklist", description="End-to-end tests")
    installed = workflow("install", str(source))
    assert installed.exit_code == 0, installed.output
    assert f"Installed workflow e2e at {registry_dir / 'e2e'}" in installed.output

    listed = workflow("list")
    assert listed.exit_code == 0
    assert "e2e" in listed.output
    assert "End-to-end tests" in listed.output

    shown = workflow("show", "e2e")
    assert shown.exit_code == 0
    assert "Do {input}" in shown.output
    assert "# Checklist" in shown.output

    removed = workflow("remove", "e2e")
    assert removed.exit_code == 0
    assert "Removed workflow e2e" in removed.output
    assert "No workflows installed" in workflow("list").output


def test_list_and_show_print_json(tmp_path, registry_dir):
    workflow("install", str(write_workflow(tmp_path / "w", tracker="# T")))
    [entry] = json.loads(workflow("list", "--json").output)
    assert entry["name"] == "w"
    assert entry["path"] == str(registry_dir / "w")
    assert entry["error"] is None
    assert entry["loop"]["trackerTemplate"] == "# T"
    assert json.loads(workflow("show", "w", "--json").output) == entry


def test_a_broken_entry_is_listed_with_its_error(tmp_path, registry_dir):
    workflow("install", str(write_workflow(tmp_path / "w")))
    (registry_dir / "w" / "workflow.json").write_text("[]")
    listed = workflow("list")
    assert listed.exit_code == 0
    assert "invalid:" in listed.output
    [entry] = json.loads(workflow("list", "--json").output)
    assert "must be a JSON object" in entry["error"]


def test_errors_exit_2_with_a_message(tmp_path, registry_dir):
    invalid = write_workflow(tmp_path / "bad", promptTemplate="no placeholder")
    cases = [
        (("install", str(tmp_path / "missing")), "no such file or folder"),
        (("install", str(invalid)), "promptTemplate: must contain {input}"),
        (("show", "nope"), "no workflow named 'nope' is installed"),
        (("remove", "../etc"), "invalid workflow name '../etc'"),
    ]
    for args, message in cases:
        result = workflow(*args)
        assert result.exit_code == 2, args
        assert message in " ".join(result.output.split()), args


def test_reinstalling_needs_force(tmp_path, registry_dir):
    source = write_workflow(tmp_path / "w")
    assert workflow("install", str(source)).exit_code == 0
    refused = workflow("install", str(source))
    assert refused.exit_code == 2
    assert "--force" in refused.output
    assert workflow("install", str(source), "--force").exit_code == 0


def test_the_example_workflow_installs_and_renders(registry_dir):
    example = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "e2e-testing"
    assert workflow("install", str(example)).exit_code == 0
    loaded = resolve("e2e-testing")
    assert loaded.render_prompt("the login flow").startswith(
        "Write end-to-end tests for: the login flow\n"
    )
    assert loaded.loop.tracker_template == (example / "tracker.md").read_text()
