"""The commands GeminiAdapter builds, run as built by the pinned Gemini CLI against the mock:
resuming a session, and running without the user's own configuration."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentRequest
from ralphctl.agents.gemini import GeminiAdapter
from ralphctl.agents.gemini_stream import GeminiStreamParser
from ralphctl.domain.model import IterationResult
from tests.agents.gemini.harness import SETTINGS, RealGemini
from tests.agents.streams import exited
from tests.mockapi import Reply

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(120)]

SESSION = "5e55a1d0-0000-4000-8000-00000000abcd"


def run_adapter(
    gemini: RealGemini, monkeypatch: pytest.MonkeyPatch, **fields: Any
) -> IterationResult:
    """One iteration as ralphctl would run it: the adapter's argv, stdin and environment."""
    for name, value in gemini.env.items():
        monkeypatch.setenv(name, value)  # the adapter reads HOME, XDG_DATA_HOME, …BIN
    request = AgentRequest(
        prompt="Say hello.", workdir=gemini.project, iteration=1, session_id=SESSION
    )
    command = GeminiAdapter().build_command(replace(request, **fields))
    done = subprocess.run(
        command.argv,
        input=command.stdin,
        cwd=gemini.project,
        env={**gemini.env, **command.env},
        capture_output=True,
        timeout=60,
        check=False,
    )
    parser = GeminiStreamParser()
    for line in done.stdout.splitlines():
        parser.feed(line)
    return parser.finish(exited(done.returncode, done.stderr.decode(errors="replace")))


def test_a_resumed_session_sends_the_earlier_conversation_again(gemini, monkeypatch):
    first_request = len(gemini.main_requests)
    gemini.server.set_script(Reply("Hello once."), Reply("Hello again."))

    first = run_adapter(gemini, monkeypatch)
    second = run_adapter(gemini, monkeypatch, resume=True)

    assert (first.final_text, second.final_text) == ("Hello once.", "Hello again.")
    assert first.session_id == second.session_id == SESSION
    resumed = gemini.main_requests[first_request + 1].body["contents"]
    model_turns = [c for c in resumed if c["role"] == "model"]
    assert [p["text"] for p in model_turns[0]["parts"]] == ["Hello once."]


def test_an_isolated_run_keeps_the_users_auth_but_not_their_hooks(gemini, monkeypatch):
    hooked = gemini.project.parent / "hooked"
    hook = {"type": "command", "command": f"touch {hooked}; echo '{{}}'"}
    user_settings = {**SETTINGS, "hooks": {"AfterAgent": [{"hooks": [hook]}]}}
    (gemini.home / ".gemini" / "settings.json").write_text(json.dumps(user_settings))
    gemini.server.set_script(Reply("Isolated."), Reply("Not isolated."))

    isolated = run_adapter(gemini, monkeypatch, isolate_config=True)
    assert not hooked.exists()
    plain = run_adapter(gemini, monkeypatch, isolate_config=False)

    assert (isolated.final_text, isolated.is_error) == ("Isolated.", False)
    assert (plain.final_text, plain.is_error) == ("Not isolated.", False)
    assert hooked.exists()  # the same hook does run without isolation
    isolated_home = Path(gemini.env["XDG_DATA_HOME"]) / "ralphctl" / "agent-homes" / "gemini"
    assert (isolated_home / ".gemini" / "settings.json").is_file()
