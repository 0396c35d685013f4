"""``budget_warning``: said once per budget and loop when 80 % of it is spent, not again after
a restart (read back from the stored events)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ralphctl.domain.budget_warnings import budget_warnings
from ralphctl.domain.states import StopReason
from ralphctl.domain.stoprules import Budgets, Totals
from ralphctl.store.repository import Store
from tests.engine.test_runner import new_loop, run


def warnings_of(db: Store, loop_id: str) -> list[dict[str, object]]:
    return [event.data for event in db.events_of(loop_id, ["budget_warning"])]


def test_a_budget_warning_is_said_once_when_80_percent_is_spent(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    with Store.open(str(tmp_path / "db.sqlite")) as db:
        steps = [{"text": f"step {n}", "cost_usd": 0.3} for n in range(1, 6)]
        loop, config = new_loop(
            db, workdir, steps, max_iterations=10, max_cost_usd=1.0, no_progress_threshold=None
        )

        final = run(db, loop, config)

        assert final.stop_reason is StopReason.MAX_COST
        assert warnings_of(db, loop.id) == [
            {"iteration": 3, "budget": "cost", "used": 0.9, "limit": 1.0, "fraction": 0.9}
        ]


def test_a_resumed_loop_does_not_warn_again(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    with Store.open(str(tmp_path / "db.sqlite")) as db:
        steps = [{"text": f"step {n}"} for n in range(1, 8)]
        loop, config = new_loop(db, workdir, steps, max_iterations=5, no_progress_threshold=None)
        first = run(db, loop, config)
        raised = replace(config, max_iterations=6)
        again = run(db, replace(db.get_loop(loop.id), config=raised.to_json()), raised)

        assert (first.iteration, again.iteration) == (5, 6)
        assert [w["iteration"] for w in warnings_of(db, loop.id)] == [4]


def test_each_budget_is_warned_about_on_its_own() -> None:
    budgets = Budgets(max_iterations=10, max_runtime_s=100, max_cost_usd=2.0, max_tokens=1000)
    totals = Totals(iterations=8, runtime_s=50, cost_usd=1.9, tokens=900)

    found = budget_warnings(totals, budgets, warned={"tokens"})

    assert [w["budget"] for w in found] == ["iterations", "cost"]
    assert budget_warnings(totals, Budgets(), warned=()) == []
