"""``clear_context`` (``--clear-context``, TOML ``clear_context``): in hook mode each block
also asks the agent CLI to clear the model's memory, which only Gemini CLI's hook can do
(AfterAgent ``hookSpecificOutput.clearContext``). The real Gemini CLI runs it end to end in
tests/agents/gemini/test_gemini_hook_mode.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ralphctl.agents.gemini import GeminiAdapter
from ralphctl.cli.loop_flags import loop_settings
from ralphctl.domain.config import LoopConfig
from ralphctl.engine.hookmode.runner import HookLoopRunner
from ralphctl.engine.hookmode.server import StopRequest
from ralphctl.engine.hookmode.setup import prepare
from ralphctl.engine.starting import InvalidSpec, LoopRequest, prepare_loop
from ralphctl.hook.tracker import load
from ralphctl.store.repository import Store
from tests.hook.agent_inputs import agent_stop


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "user.toml"))


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def hook_request(workdir: Path, agent: str, **settings: object) -> LoopRequest:
    return LoopRequest("Fix it.", workdir, {"agent": agent, **settings}, mode="hook")


def test_the_flag_gives_the_setting():
    assert loop_settings({"clear_context": True}) == {"clear_context": True}
    assert loop_settings({"clear_context": None}) == {}


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_an_agent_whose_hook_cannot_clear_the_memory_is_refused_with_the_ones_that_can(
    workdir, agent
):
    with pytest.raises(
        InvalidSpec,
        match=f"the {agent} agent's hook cannot clear the model's memory; agents that can: gemini",
    ):
        prepare_loop(hook_request(workdir, agent, clear_context=True))


def test_a_fresh_loop_refuses_it_as_every_iteration_starts_afresh(workdir):
    request = LoopRequest("Fix it.", workdir, {"agent": "gemini", "clear_context": True})
    with pytest.raises(InvalidSpec, match="clear_context: for --mode hook"):
        prepare_loop(request)


def test_the_project_file_may_set_it_for_gemini(workdir):
    (workdir / "ralphctl.toml").write_text("[loops.defaults]\nclear_context = true\n")

    plan = prepare_loop(hook_request(workdir, "gemini"))

    assert plan.config.clear_context
    assert plan.sources["clear_context"] == str(workdir / "ralphctl.toml")


def test_a_gemini_sessions_blocks_ask_for_a_fresh_context(workdir, tmp_path):
    store = Store.open(str(tmp_path / "ralphctl.db"))
    adapter, config = GeminiAdapter(), LoopConfig(agent="gemini", clear_context=True)
    ready = prepare(store, adapter, "Fix it.", workdir, config, name="test")
    tracker = load(ready.session.tracker)
    assert tracker is not None
    assert tracker.fields["clear_context"] is True
    runner = HookLoopRunner(store, adapter, ready.loop, config, ready.session)
    raw = agent_stop("gemini", workdir, session=ready.session.session_id)

    reply = runner.stops.on_stop(
        StopRequest(["--format", "gemini"], None, time.monotonic() + 1, raw)
    )

    answer = json.loads(reply.line or "")
    assert answer["decision"] == "deny"
    assert answer["hookSpecificOutput"] == {"hookEventName": "AfterAgent", "clearContext": True}
