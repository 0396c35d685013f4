"""The Stop decision, as a pure function: the seed's flow on top of the brain."""

from __future__ import annotations

from typing import Any

from ralphctl.domain.markers import parse_marker
from ralphctl.domain.states import StopReason
from ralphctl.domain.stoprules import Budgets, Totals
from ralphctl.hook.stop import CAP_NOTE, Allow, LoopState, StopBlock, decide

NOW = "2026-11-22T10:00:00Z"
DONE = parse_marker("<promise>ALL GREEN</promise>")


def state(**overrides: Any) -> LoopState:
    values: dict[str, Any] = {
        "iteration": 1,
        "budgets": Budgets(max_iterations=5),
        "totals": Totals(),
        "marker": DONE,
        "reason": "Keep going.",
        "body": "# Loop Progress\n\n_In progress_\n",
    }
    return LoopState(**(values | overrides))


def stop(loop: LoopState, text: str = "Still working.", *, active: bool = False):
    return decide(loop, text, stop_hook_active=active, now=NOW)


def test_an_unfinished_iteration_is_blocked_and_counted():
    outcome = stop(state(iteration=2))
    assert isinstance(outcome.intent, StopBlock)
    assert outcome.intent.reason.startswith("Keep going.")
    assert "(Ralph iteration 3/5)" in outcome.intent.reason
    assert outcome.intent.system_message == "Ralph iteration 3/5"
    assert outcome.changes == {"last_decision_at": NOW, "iteration": 3, "last_decision": "block"}
    assert outcome.ended is None


def test_the_promise_completes_the_loop():
    outcome = stop(state(iteration=2), "All tests pass.\n<promise>ALL GREEN</promise>")
    assert outcome.intent == Allow("Ralph loop complete at iteration 2/5.")
    assert outcome.changes["active"] is False
    assert outcome.changes["ended_reason"] == "completion"
    assert outcome.detection.completed
    assert "iteration" not in outcome.changes


def test_a_promise_kept_on_the_last_iteration_is_a_completion_not_a_limit():
    outcome = stop(state(iteration=5), "<promise>ALL GREEN</promise>")
    assert outcome.ended is not None
    assert outcome.ended.reason == StopReason.COMPLETION


def test_the_iteration_bound_ends_the_loop_and_says_so():
    outcome = stop(state(iteration=5))
    assert outcome.intent == Allow("Ralph loop stopped: max iterations (5) reached.")
    assert outcome.changes["ended_reason"] == "max_iterations"


def test_a_blocked_declaration_ends_the_loop_with_its_reason():
    outcome = stop(state(), "I need the API key.\n<promise>BLOCKED: no API key</promise>")
    assert outcome.intent == Allow("Ralph loop blocked at iteration 1: no API key")
    assert outcome.changes["ended_reason"] == "blocked"


def test_the_tracker_bodys_last_line_can_complete_the_loop():
    body = "# Loop Progress\n\n- [x] everything\n\n<promise>ALL GREEN</promise>\n"
    outcome = stop(state(body=body))
    assert outcome.ended is not None
    assert outcome.ended.reason == StopReason.COMPLETION


def test_a_template_that_only_mentions_the_promise_does_not_complete():
    body = "Print <promise>ALL GREEN</promise> when done.\n\n_In progress_\n"
    assert isinstance(stop(state(body=body)).intent, StopBlock)


def test_runtime_cost_and_token_budgets_end_the_loop():
    for budgets, totals, reason in [
        (Budgets(max_iterations=9, max_runtime_s=60), Totals(runtime_s=61), "max_runtime"),
        (Budgets(max_iterations=9, max_cost_usd=1.0), Totals(cost_usd=1.5), "max_cost"),
        (Budgets(max_iterations=9, max_tokens=100), Totals(tokens=100), "max_tokens"),
    ]:
        outcome = stop(state(budgets=budgets, totals=totals))
        assert outcome.changes["ended_reason"] == reason
        assert isinstance(outcome.intent, Allow)
        assert outcome.intent.system_message
        assert reason in outcome.intent.system_message


def test_stop_hook_active_is_recorded_but_does_not_end_the_loop():
    outcome = stop(state(stop_hook_active_count=4), active=True)
    assert isinstance(outcome.intent, StopBlock)
    assert outcome.changes["stop_hook_active_count"] == 5
    assert not outcome.cap_override


def test_a_stop_after_our_block_without_stop_hook_active_is_a_cap_override():
    loop = state(iteration=3, last_decision="block", cap_overrides=1)
    outcome = stop(loop, "Hello")
    assert outcome.cap_override
    assert outcome.changes["cap_overrides"] == 2
    assert outcome.intent == StopBlock(
        "Keep going.\n\n(Ralph iteration 4/5)", f"Ralph iteration 4/5 | {CAP_NOTE}"
    )
    assert not outcome.detection.completed


def test_without_a_promise_only_the_budgets_end_the_loop():
    outcome = stop(state(marker=None), "<promise>ALL GREEN</promise>\nBLOCKED: nothing")
    assert isinstance(outcome.intent, StopBlock)


def test_unlimited_iterations_show_no_fraction():
    outcome = stop(state(budgets=Budgets(max_iterations=None, max_runtime_s=600)))
    assert outcome.intent == StopBlock("Keep going.\n\n(Ralph iteration 2)", "Ralph iteration 2")
