from dataclasses import replace
from typing import Any

from ralphctl.domain.conditions import Remaining
from ralphctl.domain.markers import detect, parse_marker
from ralphctl.engine.prompt import PastIteration, PromptContext, build_prompt

LEFT = Remaining(iterations=18, runtime_s=3600, cost_usd=4.5, tokens=None)
MARKER = parse_marker("<promise>COMPLETE</promise>")


def context(**changes: Any) -> PromptContext:
    base = PromptContext(
        task="Make the failing tests pass.",
        iteration=3,
        max_iterations=20,
        remaining=LEFT,
        marker=MARKER,
    )
    return replace(base, **changes)


def test_the_prompt_starts_with_the_task_and_states_the_iteration_and_budget():
    prompt = build_prompt(context())
    assert prompt.startswith("Make the failing tests pass.\n")
    assert "iteration 3 of at most 20" in prompt
    assert "Budget left: 18 iterations, 60 min, $4.50." in prompt


def test_it_explains_the_completion_and_blocked_markers():
    prompt = build_prompt(context())
    assert "`<promise>COMPLETE</promise>`" in prompt
    assert "`<promise>BLOCKED: <the reason></promise>`" in prompt


def test_a_plain_marker_is_explained_as_a_last_line():
    prompt = build_prompt(context(marker=parse_marker("RALPH_DONE")))
    assert "end your reply with the line `RALPH_DONE`" in prompt


def test_it_summarises_recent_iterations_and_the_last_error():
    history = [PastIteration(n, "ok", 12.4, f"did step {n}\nwith details") for n in range(1, 9)]
    prompt = build_prompt(context(history=history, last_error="exit 1: API overloaded"))
    assert "- #8 ok, 12s: did step 8 with details" in prompt
    assert "#3 ok" not in prompt  # only the last five are shown
    assert "The previous iteration failed with:\nexit 1: API overloaded" in prompt


def test_the_agent_echoing_the_instructions_does_not_complete_the_loop():
    prompt = build_prompt(context())
    instructions = [line for line in prompt.splitlines() if "COMPLETE" in line]
    echoed = "Understood. My instructions say:\n" + "\n".join(instructions)
    assert not detect(echoed, MARKER, prompt=prompt).completed
    assert detect("Done.\n<promise>COMPLETE</promise>", MARKER, prompt=prompt).completed


def test_the_same_context_gives_the_same_prompt():
    assert build_prompt(context()) == build_prompt(context())


def test_a_ringmaster_marker_is_asked_for_in_its_own_spelling():
    prompt = build_prompt(context(marker=parse_marker("<ringmaster>COMPLETE</ringmaster>")))
    assert "`<ringmaster>COMPLETE</ringmaster>`" in prompt
    assert "`<ringmaster>BLOCKED: <the reason></ringmaster>`" in prompt
    assert "<promise>" not in prompt


def test_the_continue_message_opens_the_prompt_from_the_second_iteration_on():
    first = build_prompt(context(iteration=1, continue_message="Next box."))
    later = build_prompt(context(iteration=2, continue_message="Next box."))
    assert first.startswith("Make the failing tests pass.\n")
    assert later.startswith("Next box.\n\nMake the failing tests pass.\n")


def test_a_tracker_is_named_with_the_lines_that_end_it():
    prompt = build_prompt(context(tracker=".ralph/loops/abc/loop-tracker.md"))
    assert "Progress tracker: `.ralph/loops/abc/loop-tracker.md`." in prompt
    assert "make\nits last line `<promise>COMPLETE</promise>`" in prompt
