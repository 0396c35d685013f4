"""The loop-start service: one request, every layer of settings, one plan (engine/starting)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ralphctl.agents.base import Capabilities
from ralphctl.agents.claude import ClaudeAdapter
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.states import LoopStatus
from ralphctl.engine.starting import (
    FreshOnlySettings,
    InvalidSpec,
    LoopAlreadyExists,
    LoopRequest,
    attach_session,
    check_free,
    new_runner,
    prepare_loop,
    resume_plan,
    store_loop,
)
from ralphctl.store.repository import Store
from ralphctl.workflows.registry import install

EXAMPLE_WORKFLOW = Path(__file__).parents[2] / "examples" / "workflows" / "e2e-testing"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "user.toml"))
    monkeypatch.setenv("RALPHCTL_WORKFLOWS_DIR", str(tmp_path / "workflows"))


@pytest.fixture
def store(tmp_path: Path):
    with Store.open(str(tmp_path / "ralphctl.db")) as opened:
        yield opened


def test_the_request_wins_over_the_project_file_which_wins_over_the_user_file(
    tmp_path: Path, workdir: Path
) -> None:
    (tmp_path / "user.toml").write_text("[loops.defaults]\nmax_iterations = 3\ncooldown = 7\n")
    (workdir / "ralphctl.toml").write_text("[loops.defaults]\nmax_iterations = 4\n")

    plan = prepare_loop(LoopRequest("Fix it.", workdir, {"max_cost_usd": 2.0, "agent": None}))

    assert (plan.config.max_iterations, plan.config.cooldown, plan.config.max_cost_usd) == (
        4,
        7.0,
        2.0,
    )
    assert plan.sources["max_cost_usd"] == "flag"
    assert plan.sources["max_iterations"] == str(workdir / "ralphctl.toml")
    assert plan.loop.status is LoopStatus.PENDING
    assert (plan.loop.task, plan.loop.name, plan.loop.agent) == ("Fix it.", "Fix it.", "claude")


def test_a_workflow_renders_the_task_and_supplies_its_loop_settings(workdir: Path) -> None:
    install(EXAMPLE_WORKFLOW)

    plan = prepare_loop(LoopRequest("the login flow", workdir, workflow="e2e-testing"))

    assert "Write end-to-end tests for: the login flow" in plan.loop.task
    assert plan.loop.name == "the login flow"
    assert plan.loop.workflow == "e2e-testing"
    assert plan.config.completion_signal == "<promise>E2E COMPLETE</promise>"
    assert plan.sources["completion_signal"] == "workflow e2e-testing"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mode": "dreamy"}, "mode 'dreamy': use fresh or hook"),
        ({"task": " \n"}, "the task is empty"),
        ({"workdir": Path("/no/such/dir")}, "work dir /no/such/dir is not a directory"),
        ({"settings": {"agent": "nope"}}, "unknown agent 'nope'"),
        ({"workflow": "no-such-workflow"}, "no-such-workflow"),
        ({"mode": "hook", "settings": {"agent_args": ["--resume", "x"]}}, "sets the session"),
    ],
)
def test_a_request_that_cannot_run_is_refused_with_its_reason(
    workdir: Path, change: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidSpec, match=message):
        prepare_loop(replace(LoopRequest("Fix it.", workdir), **change))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "capabilities",
    [Capabilities(same_session=False, resume=True), Capabilities(same_session=True, resume=False)],
    ids=["no stop hook", "no resume"],
)
def test_hook_mode_needs_an_agent_that_keeps_a_session_going(
    workdir: Path, capabilities: Capabilities
) -> None:
    class OneShot(ClaudeAdapter):
        name = "one-shot"

    OneShot.capabilities = capabilities
    request = LoopRequest("Fix it.", workdir, mode="hook")

    with pytest.raises(InvalidSpec, match="the one-shot agent cannot do; agents that can: claude"):
        prepare_loop(request, adapters=lambda _: OneShot())


def test_settings_of_fresh_mode_are_refused_in_hook_mode_by_name(workdir: Path) -> None:
    request = LoopRequest("Fix it.", workdir, {"cooldown": "5s", "gates": ["pytest"]}, mode="hook")

    with pytest.raises(FreshOnlySettings) as refused:
        prepare_loop(request)

    assert refused.value.names == ["cooldown", "gates"]


def test_a_permission_mode_the_agent_does_not_take_is_refused(workdir: Path) -> None:
    class Strict(ClaudeAdapter):
        capabilities = Capabilities(permission_modes=frozenset({"plan"}))

    with pytest.raises(InvalidSpec, match="permission_mode 'acceptEdits': the claude agent takes"):
        prepare_loop(LoopRequest("Fix it.", workdir), adapters=lambda _: Strict())


def test_nothing_is_stored_until_the_caller_says_so(workdir: Path, store: Store) -> None:
    plan = prepare_loop(LoopRequest("Fix it.", workdir))
    assert store.list_loops() == []

    stored = store_loop(store, plan)

    assert store.get_loop(plan.loop.id).task == "Fix it."
    with pytest.raises(LoopAlreadyExists, match=f"loop {plan.loop.id} .* already works in"):
        check_free(store, workdir)
    check_free(store, workdir, except_id=stored.loop.id)


def test_a_stored_hook_loop_is_armed_with_its_session(workdir: Path, store: Store) -> None:
    plan = store_loop(store, prepare_loop(LoopRequest("Write notes.", workdir, mode="hook")))

    assert plan.session is not None
    assert Path(plan.session.tracker).is_file()
    assert store.get_loop(plan.loop.id).agent_session_id == plan.session.session_id


def test_resuming_raises_budgets_over_the_stored_configuration(workdir: Path) -> None:
    plan = prepare_loop(LoopRequest("Fix it.", workdir, {"max_iterations": 5}))

    again = resume_plan(plan.loop, {"max_iterations": 9, "cooldown": None})

    assert again.config.max_iterations == 9
    assert again.loop.config["max_iterations"] == 9
    assert again.config.max_cost_usd == plan.config.max_cost_usd


def test_a_loop_whose_work_dir_is_gone_cannot_be_resumed(workdir: Path) -> None:
    plan = prepare_loop(LoopRequest("Fix it.", workdir))
    workdir.rmdir()

    with pytest.raises(InvalidSpec, match="no longer exists"):
        resume_plan(plan.loop)


def test_a_hook_loop_runs_only_with_its_session_attached(workdir: Path, store: Store) -> None:
    plan = prepare_loop(LoopRequest("Write notes.", workdir, mode="hook"))

    with pytest.raises(ValueError, match="attach_session first"):
        new_runner(store, plan)
    assert attach_session(prepare_loop(LoopRequest("x", workdir))).session is None


def test_a_fresh_plan_gets_a_fresh_context_runner(workdir: Path, store: Store) -> None:
    from ralphctl.engine.runner import LoopRunner

    plan = prepare_loop(LoopRequest("Fix it.", workdir, {"max_iterations": 2}))
    runner = new_runner(store, plan)

    assert isinstance(runner, LoopRunner)
    assert runner.config == LoopConfig.from_mapping(plan.loop.config)
    assert store.list_loops() == []  # building a runner starts nothing
