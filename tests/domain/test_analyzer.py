"""Response analysis: every signal, with the cases that must and must not raise it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ralphctl.agents.claude_stream import EDIT_TOOLS
from ralphctl.domain.analyzer import (
    AnalyzerConfig,
    ErrorClass,
    Signals,
    analyse,
    breaker_outcome,
    classify_error,
    edited_files,
    prompt_notes,
)
from ralphctl.domain.breaker import IterationOutcome
from ralphctl.domain.model import IterationResult, PermissionDenial, RateLimitInfo, ToolUse
from ralphctl.domain.questions import find_question
from ralphctl.domain.status_block import AgentStatus, StatusBlock, parse_status_block
from ralphctl.domain.steering import NO_HUMAN_NOTE
from tests.agents.streams import REAL_CLI_CASSETTES, exited, replay_lines

# --- the agent asked the user -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "question"),
    [
        pytest.param(
            "I implemented the parser.\n\nShould I also add tests for the CLI?",
            "Should I also add tests for the CLI?",
            id="a final question",
        ),
        pytest.param(
            "Two options remain. Which approach do you prefer?\n1. Keep it\n2. Drop it",
            "Which approach do you prefer?",
            id="a question followed by its options",
        ),
        pytest.param(
            "Would you like me to continue with phase 2? Here is a summary of the changes.",
            "Would you like me to continue with phase 2?",
            id="an addressed question before a summary",
        ),
        pytest.param(
            "The schema has two candidates. Please confirm which one to use.",
            "Please confirm which one to use.",
            id="please confirm",
        ),
        pytest.param(
            "Let me know if you'd like me to proceed with the migration.",
            "Let me know if you'd like me to proceed with the migration.",
            id="let me know if you'd like",
        ),
        pytest.param(
            "Let me know which database you want.\n\nThanks!",
            "Let me know which database you want.",
            id="let me know which",
        ),
        pytest.param(
            "I need your input on the API naming before going further.",
            "I need your input on the API naming before going further.",
            id="I need your input",
        ),
        pytest.param(
            "Stopping here, waiting for your approval of the plan.",
            "Stopping here, waiting for your approval of the plan.",
            id="waiting for your approval",
        ),
        pytest.param(
            "## Open questions\n- Should the API be versioned?",
            "Should the API be versioned?",
            id="an open question in a list",
        ),
        pytest.param(
            "Done.\n```\nok\n```\nShall I push the branch?",
            "Shall I push the branch?",
            id="after a code block",
        ),
    ],
)
def test_a_question_to_the_user_is_found(text, question):
    assert find_question(text) == question


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("All tests pass. The parser is done.", id="no question"),
        pytest.param("Why did the test fail? The fixture was stale. Fixed it.", id="self-answered"),
        pytest.param("What should we do next? We should fix the parser.", id="rhetorical"),
        pytest.param(
            "Should I also update the docs? I've left them as is for now.", id="settled by me"
        ),
        pytest.param("All done. Let me know if you have any questions!", id="pleasantry"),
        pytest.param("Finished. Feel free to ask if anything is unclear.", id="feel free"),
        pytest.param("Anything else?", id="anything else"),
        pytest.param("Added a prompt:\n```\nread -p 'Continue?' x\n```\nIt works.", id="in code"),
        pytest.param("The check uses `input('Proceed?')` now.", id="inline code"),
        pytest.param('The user story says "should I retry?" and I made it retry.', id="quoted"),
        pytest.param("> Should I do it?\nI did it.", id="block quote"),
        pytest.param("See https://example.com/search?q=limits for details.", id="url"),
        pytest.param(
            "Done.\n---RALPH_STATUS---\nSTATUS: COMPLETE\nEXIT_SIGNAL: true\n"
            "RECOMMENDATION: Ship it?\n---END_RALPH_STATUS---",
            id="inside the status block",
        ),
        pytest.param("", id="empty"),
    ],
)
def test_no_question_is_found_where_none_was_asked(text):
    assert find_question(text) is None


def test_a_question_means_the_next_prompt_says_no_human_is_available():
    signals = analyse(IterationResult(final_text="Which database should I use?"))
    assert signals.asked_question
    assert signals.question == "Which database should I use?"
    assert prompt_notes(signals) == [NO_HUMAN_NOTE]
    assert NO_HUMAN_NOTE == "No human is available: choose a safe default and continue."


def test_a_failed_run_asked_nothing():
    signals = analyse(IterationResult(final_text="Shall I retry?", is_error=True))
    assert not signals.asked_question


# --- test-only iterations -----------------------------------------------------------------


def tools(*calls: tuple[str, str]) -> tuple[ToolUse, ...]:
    """Tool uses as the Claude adapter reports them (it marks its file-editing tools)."""
    return tuple(ToolUse(name, summary, name in EDIT_TOOLS) for name, summary in calls)


@pytest.mark.parametrize(
    "calls",
    [
        pytest.param([("Bash", "pytest -q")], id="pytest"),
        pytest.param([("Read", "src/a.py"), ("Bash", "cd app && npm test")], id="npm test"),
        pytest.param([("Bash", "uv run pytest tests/engine -q")], id="through uv run"),
        pytest.param([("Bash", "python -m pytest -x")], id="python -m pytest"),
        pytest.param([("Bash", "CI=1 ./node_modules/.bin/jest")], id="env and path"),
        pytest.param([("Bash", "git status"), ("Bash", "cargo test --all")], id="cargo test"),
        pytest.param([("Bash", "go test ./... | tail -5")], id="piped"),
        pytest.param([("Bash", "make check"), ("Grep", "TODO")], id="make check"),
    ],
)
def test_an_iteration_that_only_ran_tests_is_test_only(calls):
    assert analyse(IterationResult(tool_uses=tools(*calls))).test_only


@pytest.mark.parametrize(
    "calls",
    [
        pytest.param([], id="no tools"),
        pytest.param([("Read", "a.py"), ("Bash", "git status")], id="no tests"),
        pytest.param([("Bash", "pytest"), ("Edit", "src/a.py")], id="edited a file"),
        pytest.param([("Bash", "pytest"), ("Write", "notes.md")], id="wrote a file"),
        pytest.param([("Bash", "pytest && git commit -am wip")], id="committed"),
        pytest.param([("Bash", "sed -i s/a/b/ x.py && pytest")], id="edited through the shell"),
        pytest.param([("Bash", "grep -r pytest setup.cfg")], id="only mentions pytest"),
    ],
)
def test_an_iteration_that_changed_something_is_not_test_only(calls):
    assert not analyse(IterationResult(tool_uses=tools(*calls))).test_only


def block_text(**fields: str) -> str:
    lines = "\n".join(f"{key}: {value}" for key, value in fields.items())
    return f"Ran the suite.\n---RALPH_STATUS---\n{lines}\n---END_RALPH_STATUS---"


@pytest.mark.parametrize(
    ("fields", "test_only"),
    [
        ({"WORK_TYPE": "TESTING", "FILES_MODIFIED": "0"}, True),
        ({"WORK_TYPE": "TESTING", "FILES_MODIFIED": "2"}, False),
        ({"WORK_TYPE": "IMPLEMENTATION", "FILES_MODIFIED": "0"}, False),
        ({"WORK_TYPE": "TESTING"}, False),
    ],
)
def test_without_tool_data_the_status_block_tells_a_test_only_iteration(fields, test_only):
    text = block_text(STATUS="IN_PROGRESS", EXIT_SIGNAL="false", **fields)
    assert analyse(IterationResult(final_text=text)).test_only is test_only


def test_test_only_iterations_get_a_prompt_note():
    notes = prompt_notes(Signals(output_chars=0, test_only=True))
    assert notes == [
        "The last iteration only ran tests and changed nothing: if the work is done, declare "
        "completion; otherwise make the next change."
    ]


# --- output collapse ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chars", "previous", "collapsed"),
    [
        pytest.param(299, [1000, 1000, 1000], True, id="fell by more than 70 %"),
        pytest.param(300, [1000, 1000, 1000], False, id="fell by exactly 70 %"),
        pytest.param(100, [1000, 1000], False, id="too little history"),
        pytest.param(10, [150, 150, 150], False, id="short answers are no signal"),
        pytest.param(250, [100, 5000, 900, 1000, 1000, 1000], True, id="median of the last 5"),
        pytest.param(250, [5000, 100, 100, 500, 500], False, id="median, not mean"),
    ],
)
def test_output_collapse_compares_with_the_recent_median(chars, previous, collapsed):
    result = IterationResult(final_text="x" * chars)
    assert analyse(result, previous_lengths=previous).output_collapsed is collapsed


def test_output_collapse_thresholds_are_configurable():
    config = AnalyzerConfig(
        collapse_drop=0.5, collapse_window=2, collapse_min_history=1, collapse_min_median_chars=10
    )
    result = IterationResult(final_text="x" * 40)
    assert analyse(result, previous_lengths=[1000, 100], config=config).output_collapsed
    assert not analyse(result, previous_lengths=[60, 80], config=config).output_collapsed


def test_a_failed_run_does_not_count_as_a_collapse():
    result = IterationResult(final_text="", is_error=True)
    assert not analyse(result, previous_lengths=[1000, 1000, 1000]).output_collapsed


@pytest.mark.parametrize(
    "kwargs", [{"collapse_drop": 0}, {"collapse_drop": 1}, {"collapse_window": 0}]
)
def test_nonsensical_collapse_settings_are_refused(kwargs):
    with pytest.raises(ValueError, match="must be"):
        AnalyzerConfig(**kwargs)


# --- the status block ---------------------------------------------------------------------

FULL_BLOCK = """Implemented the parser.

```
---RALPH_STATUS---
STATUS: IN_PROGRESS
TASKS_COMPLETED_THIS_LOOP: 1
FILES_MODIFIED: 5
TESTS_STATUS: PASSING
WORK_TYPE: IMPLEMENTATION
EXIT_SIGNAL: false
RECOMMENDATION: Continue with the next task
PR_CHUNK_COMPLETE: false
---END_RALPH_STATUS---
```
"""


def test_a_status_block_is_parsed_with_every_field():
    assert parse_status_block(FULL_BLOCK) == StatusBlock(
        status=AgentStatus.IN_PROGRESS,
        exit_signal=False,
        files_modified=5,
        tasks_completed=1,
        tests_status="PASSING",
        work_type="IMPLEMENTATION",
        recommendation="Continue with the next task",
    )


def test_the_last_status_block_wins_and_the_minimal_one_needs_two_fields():
    text = (
        block_text(STATUS="IN_PROGRESS", EXIT_SIGNAL="false")
        + "\n"
        + block_text(STATUS="COMPLETE", EXIT_SIGNAL="TRUE")
    )
    assert parse_status_block(text) == StatusBlock(AgentStatus.COMPLETE, exit_signal=True)


def test_text_without_a_status_block_has_none():
    signals = analyse(IterationResult(final_text="STATUS: COMPLETE\nEXIT_SIGNAL: true"))
    assert (signals.status_block, signals.status_block_error) == (None, None)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        pytest.param(
            {"STATUS": "IN_PROGRESS | COMPLETE | BLOCKED", "EXIT_SIGNAL": "false | true"},
            "STATUS must be IN_PROGRESS, COMPLETE or BLOCKED",
            id="the template echoed back",
        ),
        pytest.param({"EXIT_SIGNAL": "true"}, "STATUS is missing", id="no STATUS"),
        pytest.param({"STATUS": "COMPLETE"}, "EXIT_SIGNAL is missing", id="no EXIT_SIGNAL"),
        pytest.param(
            {"STATUS": "DONE", "EXIT_SIGNAL": "true"}, "STATUS must be", id="unknown status"
        ),
        pytest.param(
            {"STATUS": "COMPLETE", "EXIT_SIGNAL": "false  # set to true when done"},
            "EXIT_SIGNAL must be true or false",
            id="a comment in a value",
        ),
        pytest.param(
            {"STATUS": "COMPLETE", "EXIT_SIGNAL": "true", "FILES_MODIFIED": "some"},
            "FILES_MODIFIED must be a whole number",
            id="a count that is no number",
        ),
        pytest.param(
            {"STATUS": "COMPLETE", "EXIT_SIGNAL": "true", "TESTS_STATUS": "GREEN"},
            "TESTS_STATUS must be one of",
            id="unknown tests status",
        ),
        pytest.param(
            {"STATUS": "COMPLETE", "EXIT_SIGNAL": "true", "WORK_TYPE": "coding stuff"},
            "WORK_TYPE must be one upper-case word",
            id="bad work type",
        ),
    ],
)
def test_a_malformed_status_block_is_ignored_with_the_reason(fields, error):
    signals = analyse(IterationResult(final_text=block_text(**fields)))
    assert signals.status_block is None
    assert signals.status_block_error is not None
    assert signals.status_block_error.startswith(error)
    assert prompt_notes(signals) == [
        f"Your status block was ignored ({signals.status_block_error}); follow its format "
        "exactly or leave it out."
    ]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("---RALPH_STATUS---\nSTATUS: COMPLETE\nEXIT_SIGNAL: true", "no ---END_RALPH_STATUS---"),
        ("---RALPH_STATUS---\nSTATUS: COMPLETE\nSTATUS: BLOCKED\n---END_RALPH_STATUS---", "twice"),
        ("---RALPH_STATUS---\nall done\n---END_RALPH_STATUS---", "not a KEY: value line"),
        ("---RALPH_STATUS---\nstatus: COMPLETE\n---END_RALPH_STATUS---", "not a KEY: value"),
    ],
)
def test_a_status_block_must_be_well_formed(text, error):
    assert error in (analyse(IterationResult(final_text=text)).status_block_error or "")


@pytest.mark.parametrize(
    ("fields", "declared"),
    [
        ({"FILES_MODIFIED": "3"}, True),
        ({"FILES_MODIFIED": "0"}, False),
        ({}, False),
    ],
)
def test_declared_progress_comes_from_files_modified(fields, declared):
    text = block_text(STATUS="IN_PROGRESS", EXIT_SIGNAL="false", **fields)
    assert analyse(IterationResult(final_text=text)).declared_progress is declared


# --- permission denials and error classes -------------------------------------------------


def test_denied_tools_are_listed_once_and_reach_the_prompt():
    result = IterationResult(
        permission_denials=(
            PermissionDenial("Write", "t1"),
            PermissionDenial("Bash", "t2"),
            PermissionDenial("Write", "t3"),
        )
    )
    signals = analyse(result)
    assert signals.permission_denied == ("Bash", "Write")
    assert prompt_notes(signals) == [
        "These tools were denied in the last iteration and will be denied again: Bash, Write. "
        "Do the work without them, or declare that you are blocked."
    ]


@pytest.mark.parametrize(
    ("tools", "denials", "edited"),
    [
        ((ToolUse("Edit", "a.py", True, "t1"),), (), True),
        ((ToolUse("Read", "a.py", False, "t1"),), (), False),
        ((ToolUse("Write", "a.py", True, "t1"),), (PermissionDenial("Write", "t1"),), False),
        (
            (ToolUse("Write", "a.py", True, "t1"), ToolUse("Edit", "b.py", True, "t2")),
            (PermissionDenial("Write", "t1"),),
            True,
        ),
        ((ToolUse("Write", "a.py", True, "t1"),), (PermissionDenial("Write"),), True),
    ],
)
def test_a_file_editing_tool_call_counts_as_an_edit_unless_it_was_refused(tools, denials, edited):
    result = IterationResult(tool_uses=tools, permission_denials=denials)
    assert edited_files(result) is edited


def failure(**fields: object) -> IterationResult:
    return IterationResult(is_error=True, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("result", "error_class"),
    [
        pytest.param(IterationResult(final_text="ok"), None, id="success"),
        pytest.param(failure(interrupted=True, truncated=True), None, id="interrupted"),
        pytest.param(failure(timed_out=True, truncated=True), ErrorClass.TIMEOUT, id="timeout"),
        pytest.param(failure(api_error_status=429), ErrorClass.RATE_LIMITED, id="429"),
        pytest.param(failure(assistant_error="rate_limit"), ErrorClass.RATE_LIMITED, id="rl"),
        pytest.param(
            failure(rate_limit=RateLimitInfo("rejected", 1.0)), ErrorClass.RATE_LIMITED, id="rej"
        ),
        pytest.param(
            failure(api_error_status=529, assistant_error="server_error"),
            ErrorClass.API_OVERLOADED,
            id="529",
        ),
        pytest.param(
            failure(final_text="API Error: 529 Overloaded."), ErrorClass.API_OVERLOADED, id="old"
        ),
        pytest.param(
            failure(final_text='API Error: {"type":"overloaded_error"}'),
            ErrorClass.API_OVERLOADED,
            id="overloaded_error",
        ),
        pytest.param(failure(api_error_status=401), ErrorClass.AUTH, id="401"),
        pytest.param(failure(assistant_error="billing_error"), ErrorClass.AUTH, id="billing"),
        pytest.param(failure(api_error_status=500), ErrorClass.API_ERROR, id="500"),
        pytest.param(failure(terminal_reason="model_error"), ErrorClass.API_ERROR, id="model"),
        pytest.param(
            failure(terminal_reason="budget_exhausted"), ErrorClass.AGENT_LIMIT, id="budget"
        ),
        pytest.param(failure(terminal_reason="max_turns"), ErrorClass.AGENT_LIMIT, id="turns"),
        pytest.param(
            failure(terminal_reason="malformed_tool_use_exhausted"),
            ErrorClass.TOOL_ERROR,
            id="tool",
        ),
        pytest.param(failure(truncated=True, exit_code=137), ErrorClass.CRASH, id="no result"),
        pytest.param(failure(exit_code=1), ErrorClass.AGENT_EXIT, id="exit code"),
        pytest.param(failure(exit_code=0), ErrorClass.UNKNOWN, id="unknown"),
    ],
)
def test_the_error_class_of_a_failure(result, error_class):
    assert classify_error(result) is error_class


def test_the_real_cli_overloaded_run_is_classified_and_signed_without_its_port():
    lines = (REAL_CLI_CASSETTES / "overloaded_529.jsonl").read_bytes().splitlines()
    _, result = replay_lines(lines, exited(1))
    signals = analyse(result)
    assert signals.error_class is ErrorClass.API_OVERLOADED
    assert signals.error_signature is not None
    assert signals.error_signature.startswith("api_overloaded: the agent reported an error")
    assert "42191" not in signals.error_signature


def test_the_real_cli_denied_write_is_reported():
    lines = (REAL_CLI_CASSETTES / "permission_denied_write.jsonl").read_bytes().splitlines()
    _, result = replay_lines(lines)
    assert analyse(result).permission_denied == ("Write",)


# --- the breaker's view -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "files_changed", "usage_limited", "expected"),
    [
        pytest.param(
            IterationResult(final_text="done"),
            True,
            False,
            IterationOutcome(7, progressed=True),
            id="a productive iteration",
        ),
        pytest.param(
            IterationResult(
                final_text=block_text(STATUS="IN_PROGRESS", EXIT_SIGNAL="false", FILES_MODIFIED="2")
            ),
            False,
            False,
            IterationOutcome(7, progressed=True),
            id="declared changes count as progress",
        ),
        pytest.param(
            failure(exit_code=1, error_message="the agent exited with code 1"),
            False,
            False,
            IterationOutcome(
                7, errored=True, error_signature="agent_exit: the agent exited with code <n>"
            ),
            id="a failure",
        ),
        pytest.param(
            failure(terminal_reason="budget_exhausted", error_message="budget"),
            True,
            False,
            IterationOutcome(7, error_signature="agent_limit: budget", progressed=True),
            id="the agent's own budget stop is no failure",
        ),
        pytest.param(
            failure(api_error_status=429, error_message="429"),
            False,
            True,
            IterationOutcome(
                7, errored=True, error_signature="rate_limited: <n>", usage_limited=True
            ),
            id="usage-limited",
        ),
        pytest.param(
            failure(interrupted=True, permission_denials=(PermissionDenial("Bash"),)),
            False,
            False,
            IterationOutcome(7, denied_tools=("Bash",), interrupted=True),
            id="interrupted",
        ),
    ],
)
def test_breaker_outcome(result, files_changed, usage_limited, expected):
    signals = analyse(result)
    outcome = breaker_outcome(
        7, result, signals, files_changed=files_changed, usage_limited=usage_limited
    )
    assert outcome == expected


def test_a_plain_successful_iteration_needs_no_prompt_notes():
    assert prompt_notes(analyse(IterationResult(final_text="Implemented the parser."))) == []


texts = st.text() | st.lists(
    st.sampled_from(
        [
            "?",
            "Should I ",
            "please confirm",
            "```",
            "`",
            '"',
            "> ",
            "\n",
            "- ",
            "1. ",
            "I'll ",
            "---RALPH_STATUS---",
            "---END_RALPH_STATUS---",
            "STATUS: COMPLETE",
            "EXIT_SIGNAL: true",
            "https://x/?a",
            " ",
            ".",
        ]
    )
    | st.text(max_size=4),
    max_size=30,
).map("".join)


@settings(deadline=None, max_examples=300)
@given(texts, st.booleans())
def test_analysis_never_raises_on_any_text(text, is_error):
    signals = analyse(
        IterationResult(final_text=text, is_error=is_error), previous_lengths=[500] * 5
    )
    assert signals.asked_question is (signals.question is not None)
    assert (signals.status_block is None) or (signals.status_block_error is None)
