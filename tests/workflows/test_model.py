"""workflow.json validation: every field, with messages that name the field."""

from __future__ import annotations

from typing import Any

import pytest

from ralphctl.domain import defaults
from ralphctl.workflows.model import (
    DEFAULT_TRACKER_TEMPLATE,
    Workflow,
    WorkflowError,
    check_name,
    parse_workflow,
    tracker_file_reference,
)

MINIMAL = {"name": "fix-tests", "promptTemplate": "Fix {input}"}


def no_files(reference: str) -> str:
    raise AssertionError(f"unexpected template file {reference}")


def parse(data: Any) -> Workflow:
    return parse_workflow(data, "workflow.json", no_files)


def error_of(data: Any) -> str:
    with pytest.raises(WorkflowError) as caught:
        parse(data)
    return str(caught.value)


def with_loop(**loop: Any) -> dict[str, Any]:
    return {**MINIMAL, "loop": loop}


def test_a_minimal_workflow_gets_the_documented_defaults():
    workflow = parse(MINIMAL)
    assert workflow.description == ""
    assert workflow.plugins == []
    assert workflow.loop.enabled is True
    assert workflow.loop.completion_marker == defaults.COMPLETION_SIGNAL
    assert workflow.loop.max_iterations == defaults.MAX_ITERATIONS
    assert workflow.loop.continue_message == defaults.CONTINUE_MESSAGE
    assert (
        workflow.loop.tracker_template
        == DEFAULT_TRACKER_TEMPLATE
        == ("# Loop Progress\n\n_In progress_")
    )


def test_every_field_is_read_from_its_camel_case_key():
    workflow = parse(
        {
            "name": "e2e",
            "description": "End-to-end tests",
            "plugins": ["playwright"],
            "promptTemplate": "Test {input}",
            "loop": {
                "enabled": False,
                "completionMarker": "<promise>E2E DONE</promise>",
                "maxIterations": 7,
                "continueMessage": "Next item.",
                "trackerTemplate": "# Items\n- [ ] one",
            },
        }
    )
    assert workflow.plugins == ["playwright"]
    assert workflow.loop.enabled is False
    assert workflow.loop.marker.text == "E2E DONE"
    assert workflow.loop.marker.tagged
    assert workflow.loop.max_iterations == 7
    assert workflow.loop.continue_message == "Next item."
    assert workflow.loop.tracker_template == "# Items\n- [ ] one"


def test_input_replaces_only_the_first_placeholder_and_other_braces_stay_literal():
    workflow = parse({**MINIMAL, "promptTemplate": "Test {input}; keep {input} and {x} {{y}}"})
    assert workflow.render_prompt("the login flow") == (
        "Test the login flow; keep {input} and {x} {{y}}"
    )


def test_input_is_inserted_verbatim_even_when_it_contains_braces_or_the_placeholder():
    workflow = parse(MINIMAL)
    assert workflow.render_prompt("{input} {0} \\1") == "Fix {input} {0} \\1"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ([], "workflow.json: a workflow must be a JSON object"),
        ({"promptTemplate": "{input}"}, "name: required"),
        ({"name": "x"}, "promptTemplate: required"),
        ({**MINIMAL, "name": 3}, "name: must be a string"),
        ({**MINIMAL, "name": "Fix Tests"}, "name: 'Fix Tests': use 1 to 64 characters"),
        ({**MINIMAL, "description": None}, "description: must be a string"),
        ({**MINIMAL, "plugins": "playwright"}, "plugins: must be a JSON array"),
        ({**MINIMAL, "plugins": [1]}, "plugins.0: must be a string"),
        ({**MINIMAL, "plugins": [" "]}, "plugins: plugin names must not be empty"),
        ({**MINIMAL, "plugins": ["a", "a"]}, "plugins: plugin names must be unique"),
        ({**MINIMAL, "promptTemplate": "Fix it"}, "promptTemplate: must contain {input}"),
        ({**MINIMAL, "promptTemplate": 1}, "promptTemplate: must be a string"),
        ({**MINIMAL, "loop": []}, "loop: must be a JSON object"),
        (with_loop(enabled="yes"), "loop.enabled: must be true or false"),
        (with_loop(completionMarker=""), "loop.completionMarker: a completion marker cannot"),
        (
            with_loop(completionMarker="<promise>BLOCKED: x</promise>"),
            "loop.completionMarker: a marker cannot be a BLOCKED: declaration",
        ),
        (
            with_loop(maxIterations=0),
            "loop.maxIterations: Input should be greater than or equal to 1",
        ),
        (with_loop(maxIterations="5"), "loop.maxIterations: must be an integer"),
        (with_loop(maxIterations=True), "loop.maxIterations: must be an integer"),
        (with_loop(continueMessage="  "), "loop.continueMessage: must not be empty"),
        (with_loop(trackerTemplate="\n"), "loop.trackerTemplate: must not be empty"),
        (with_loop(trackerTemplate=5), "loop.trackerTemplate: must be a string"),
    ],
)
def test_each_invalid_field_is_reported_by_its_key(data, expected):
    assert expected in error_of(data)


@pytest.mark.parametrize(
    "template",
    ["# Todo\n- [ ] a\n<promise>COMPLETE</promise>", "# Todo\nBLOCKED: waiting for a human\n"],
)
def test_a_tracker_template_that_would_end_the_loop_at_once_is_refused(template):
    message = error_of(with_loop(trackerTemplate=template))
    assert "loop: the last line of trackerTemplate declares completion" in message


def test_a_tracker_template_may_mention_the_marker_before_its_last_line():
    workflow = parse(with_loop(trackerTemplate="Finish with <promise>COMPLETE</promise>.\n- [ ] a"))
    assert workflow.loop.tracker_template.endswith("- [ ] a")


def test_unknown_keys_are_errors_that_list_the_known_keys():
    message = error_of({**MINIMAL, "prompt": "x", "loop": {"maxIteration": 3}})
    assert "prompt: unknown key; known keys: name, description, plugins, promptTemplate" in message
    assert "loop.maxIteration: unknown key; known keys: enabled, completionMarker" in message


def test_all_errors_are_reported_at_once_under_the_file_name():
    message = error_of({"name": "../x", "loop": {"maxIterations": -1}})
    assert message.startswith("workflow.json: invalid workflow:\n")
    assert message.count("\n  ") == 3  # name, promptTemplate, loop.maxIterations


@pytest.mark.parametrize(
    ("value", "reference"),
    [
        ("tracker.md", "tracker.md"),
        ("templates/Tracker.MD", "templates/Tracker.MD"),
        (" tracker.md ", "tracker.md"),
        ("# Progress\n\nsee notes.md", None),
        ("# Progress", None),
        (3, None),
    ],
)
def test_a_tracker_template_names_a_file_when_it_is_one_line_ending_in_md(value, reference):
    assert tracker_file_reference({"loop": {"trackerTemplate": value}}) == reference


def test_a_tracker_file_reference_is_replaced_by_the_files_text():
    workflow = parse_workflow(
        with_loop(trackerTemplate="tracker.md"), "workflow.json", lambda ref: f"# From {ref}"
    )
    assert workflow.loop.tracker_template == "# From tracker.md"


def test_to_json_uses_the_workflow_json_keys():
    data = parse(MINIMAL).to_json()
    assert list(data) == ["name", "description", "plugins", "promptTemplate", "loop"]
    assert parse(data) == parse(MINIMAL)


@pytest.mark.parametrize("name", ["a", "e2e-testing", "v1.2_beta", "0" * 64])
def test_safe_names_are_accepted(name):
    assert check_name(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        "..",
        "../evil",
        "a/b",
        "a\\b",
        ".hidden",
        "-dash",
        "_x",
        "Upper",
        "a..b",
        "a b",
        "x\n",
        "0" * 65,
        "é",
    ],
)
def test_names_that_could_escape_or_hide_in_the_registry_are_refused(name):
    with pytest.raises(WorkflowError, match="invalid workflow name"):
        check_name(name)
