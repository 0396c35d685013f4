"""Every agent's Stop takes the light path: the brain only once a loop applies, never the slow
standard modules, the CLI's or the store's (``bench/hook_latency.py`` has the figures)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from ralphctl.hook.arming import arm
from tests.hook.agent_inputs import agent_env, agent_stop, copilot_transcript, cursor_transcript
from tests.hook.helpers import HOOK_FILE, SESSION, run_hook

AGENTS = ("codex", "gemini", "copilot", "cursor")
#: ``json`` loads ``re``, which loads ``enum`` and ``functools``: the hook uses ``_json``.
SLOW_STDLIB = {"json", "re", "enum", "functools", "collections", "dataclasses", "typing"}
HEAVY = ("typer", "rich", "pydantic", "sqlalchemy", "alembic", "psycopg", "orjson")


def imported_modules(agent: str, stdin: bytes, project: Path) -> set[str]:
    """What the hook imports, started as the installers start it (``-I -S`` file)."""
    command = [sys.executable, "-X", "importtime", "-I", "-S", str(HOOK_FILE), "stop"]
    done = run_hook(stdin, agent_env(agent, project), "--format", agent, command=command)
    assert done.returncode == 0
    names = re.findall(r"^import time:.*\|\s*(\S+)$", done.stderr.decode(), re.MULTILINE)
    return {name.strip() for name in names}


@pytest.mark.parametrize("agent", AGENTS)
def test_a_stop_without_a_loop_does_not_load_the_brain(agent, tmp_path):
    modules = imported_modules(agent, agent_stop(agent, tmp_path), tmp_path)
    assert not modules & (SLOW_STDLIB | {"ralphctl.domain.markers", "ralphctl.hook.stop"})


@pytest.mark.parametrize("agent", AGENTS)
def test_an_active_loop_loads_the_brain_but_nothing_slow(agent, tmp_path):
    arm(str(tmp_path), "Fix it", session_id=SESSION, max_iterations=3)
    transcript = {
        "copilot": lambda: copilot_transcript(tmp_path / "events.jsonl", "Working."),
        "cursor": lambda: cursor_transcript(tmp_path / "t.jsonl", "Working."),
    }.get(agent, lambda: None)()
    stdin = agent_stop(agent, tmp_path, transcript=transcript)
    modules = imported_modules(agent, stdin, tmp_path)
    assert "ralphctl.domain.markers" in modules  # the decision really ran
    assert not modules & SLOW_STDLIB, modules & SLOW_STDLIB
    assert not [m for m in modules if m.split(".")[0] in HEAVY]
