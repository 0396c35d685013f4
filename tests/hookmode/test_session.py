"""The command of a hook-mode session: our hook injected, nothing of the user's touched."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ralphctl.agents.claude import ClaudeAdapter
from ralphctl.domain.config import LoopConfig
from ralphctl.engine.hookmode.session import Session, session_command
from ralphctl.plugin.layout import PLUGIN_ID, hook_main

SESSION = Session("5e55a1d0-2222-4000-8000-00000000c0de", "/p/.ralph/sessions/x.md", "Do it")


def command(**changes: object) -> tuple[list[str], dict[str, str]]:
    values = {
        "prompt": "Do it",
        "resume": False,
        "iteration": 1,
        "remaining_cost_usd": 2.5,
        "socket_path": "/tmp/rh/stop.sock",
        "loop_id": "abc123def456",
        "workdir": Path("/p"),
    } | changes
    built = session_command(ClaudeAdapter(), SESSION, LoopConfig(max_iterations=15), **values)  # type: ignore[arg-type]
    return list(built.argv), dict(built.env)


def test_the_stop_hook_is_injected_for_this_session_and_the_plugin_switched_off():
    argv, _ = command()
    settings = json.loads(argv[argv.index("--settings") + 1])
    [group] = settings["hooks"]["Stop"]
    [hook] = group["hooks"]
    assert hook["command"].split() == [sys.executable, "-I", "-S", hook_main(), "stop"]
    assert settings["enabledPlugins"] == {PLUGIN_ID: False}


def test_the_first_run_starts_the_session_with_its_id_and_the_prompt_on_stdin():
    argv, env = command()
    assert argv[argv.index("--session-id") + 1] == SESSION.session_id
    assert "--resume" not in argv
    assert argv[argv.index("--max-budget-usd") + 1] == "2.5000"
    assert env["RALPHCTL_HOOK_SOCKET"] == "/tmp/rh/stop.sock"
    assert env["RALPHCTL_LOOP_ID"] == "abc123def456"


def test_a_later_run_resumes_the_same_session():
    argv, _ = command(resume=True)
    assert argv[argv.index("--resume") + 1] == SESSION.session_id
    assert "--session-id" not in argv


def test_the_block_cap_covers_the_loops_bound(monkeypatch):
    monkeypatch.delenv("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", raising=False)
    _, env = command()
    assert env["CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"] == "16"


def test_agent_arguments_that_would_take_the_session_away_are_refused():
    config = LoopConfig(agent_args=("--model", "x", "--settings=a.json", "-r", "id"))
    with pytest.raises(ValueError, match="--settings -r: a same-session loop sets the session"):
        session_command(
            ClaudeAdapter(),
            SESSION,
            config,
            prompt="Do it",
            resume=False,
            iteration=1,
            remaining_cost_usd=None,
            socket_path="/tmp/rh/stop.sock",
            loop_id="abc123def456",
            workdir=Path("/p"),
        )


def test_the_loops_model_settings_apply_to_the_session():
    config = LoopConfig(model="claude-sonnet-5-5", max_output_tokens=4000)
    built = session_command(
        ClaudeAdapter(),
        SESSION,
        config,
        prompt="Do it",
        resume=False,
        iteration=1,
        remaining_cost_usd=None,
        socket_path="/tmp/rh/stop.sock",
        loop_id="abc123def456",
        workdir=Path("/p"),
    )
    argv = list(built.argv)
    assert argv[argv.index("--model") + 1] == "claude-sonnet-5-5"
    assert built.env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "4000"
