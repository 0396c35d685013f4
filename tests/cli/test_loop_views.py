"""How a loop reads in the terminal: control replies, statuses, budgets left unset."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from ralphctl.cli.loop_views import control_outcome, loop_table, status_text
from ralphctl.domain.conditions import ExternalSignal


def test_a_pause_the_runner_honours_later_reads_as_requested() -> None:
    assert control_outcome("running", ExternalSignal.PAUSE) == (
        "pause requested: it pauses after the running iteration"
    )
    asked = "asked its runner (process 42 on box) to pause after the running iteration"
    assert control_outcome("running", ExternalSignal.PAUSE, asked) == f"pause requested: {asked}"


def test_a_pause_or_stop_done_at_once_reads_as_the_status_reached() -> None:
    assert control_outcome("paused", ExternalSignal.PAUSE) == "paused"
    assert control_outcome("stopped", ExternalSignal.STOP) == "stopped"
    assert control_outcome("running", ExternalSignal.STOP) == (
        "stop requested: it stops after the running iteration"
    )


def loop(**changes: Any) -> dict[str, Any]:
    fields = {
        "id": "abcd1234",
        "name": "[red]not markup[/red]",
        "status": "running",
        "mode": "hook",
        "agent": "claude",
        "workdir": "/work/[server]",
        "task": "Fix [loops.defaults].",
        "iteration": 2,
        "max_iterations": None,
        "cost_usd": 0.30000000000000004,
        "max_cost_usd": None,
        "tokens_input": 0,
        "tokens_output": 0,
        "runtime_s": 1.0,
        "created_at": "2026-03-01T12:00:00+00:00",
    }
    return fields | changes


def rendered(table: Any) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_a_plugin_loop_runs_in_its_own_session_not_without_a_runner() -> None:
    assert str(status_text(loop(runner="none"))) == "running in its own Claude Code session"
    assert str(status_text(loop(runner="gone"))) == "running, runner gone"


def test_a_stop_reason_that_repeats_the_status_is_not_repeated() -> None:
    assert str(status_text(loop(status="blocked", stop_reason="blocked"))) == "blocked"
    assert str(status_text(loop(status="stopped", stop_reason="max_cost"))) == (
        "stopped (max_cost)"
    )


def test_unset_budgets_show_what_was_used_alone_and_text_is_never_markup() -> None:
    shown = rendered(loop_table(loop()))
    assert "│ 2 " in shown  # no "/None"
    assert "$0.30 " in shown
    assert "[red]not markup[/red]" in shown
    assert "/work/[server]" in shown
    assert "Fix [loops.defaults]." in shown


def test_set_budgets_show_what_was_used_of_them() -> None:
    shown = rendered(loop_table(loop(max_iterations=100, max_cost_usd=300.0)))
    assert "2/100" in shown
    assert "$0.30/$300.00" in shown
