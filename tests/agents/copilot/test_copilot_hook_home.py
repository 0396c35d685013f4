"""A hook-mode run's Copilot home: our agentStop hook added to a home of ralphctl's own, the
user's `~/.copilot` untouched and its installed ralphctl hook left out."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ralphctl.agents.base import AgentRequest, StopHook
from ralphctl.agents.copilot import CopilotAdapter
from ralphctl.agents.copilot_home import hooked_home
from ralphctl.agents.copilot_hooks import hook_file

HOOK = StopHook(command="/usr/bin/python3 -I -S /x/hook.py stop", timeout_s=30, max_blocks=6)
RUN_HOOK = hook_file("run-hook", 30)


def user_home(tmp_path: Path) -> Path:
    home = tmp_path / "user"
    (home / "session-state").mkdir(parents=True)
    (home / "hooks").mkdir()
    (home / "config.json").write_text('{"loggedInUsers": []}')
    (home / "hooks" / "notify.json").write_text("{}")
    (home / "hooks" / "ralphctl.json").write_text("{}")
    return home


def test_the_hooked_home_is_the_users_without_the_installed_hook(tmp_path):
    user = user_home(tmp_path)
    before = {path: path.read_bytes() for path in user.rglob("*") if path.is_file()}

    home = hooked_home(tmp_path / "hooked", user, RUN_HOOK)

    assert (home / "session-state").resolve() == user / "session-state"
    assert (home / "config.json").read_text() == '{"loggedInUsers": []}'
    assert not (home / "config.json").is_symlink()  # the CLI replaces it: a copy
    assert sorted(p.name for p in (home / "hooks").iterdir()) == [
        "notify.json",
        "ralphctl-loop.json",
    ]
    assert (home / "hooks" / "notify.json").resolve() == user / "hooks" / "notify.json"
    assert (home / "hooks" / "ralphctl-loop.json").read_text() == RUN_HOOK
    assert home.stat().st_mode & 0o077 == 0
    assert {path: path.read_bytes() for path in user.rglob("*") if path.is_file()} == before


def test_the_hooked_home_follows_the_user_at_every_run(tmp_path):
    user = user_home(tmp_path)
    hooked_home(tmp_path / "hooked", user, RUN_HOOK)
    (user / "hooks" / "notify.json").unlink()
    (user / "config.json").write_text('{"loggedInUsers": ["me"]}')

    home = hooked_home(tmp_path / "hooked", user, RUN_HOOK)

    assert sorted(p.name for p in (home / "hooks").iterdir()) == ["ralphctl-loop.json"]
    assert (home / "config.json").read_text() == '{"loggedInUsers": ["me"]}'


def test_a_hook_mode_run_names_its_home_and_runs_our_hook_in_copilot_form(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    request = AgentRequest(
        prompt="go", workdir=tmp_path, iteration=1, session_id="s", stop_hook=HOOK
    )

    command = CopilotAdapter().build_command(request)

    home = Path(command.env["COPILOT_HOME"])
    assert home.parent.name == "copilot-homes"
    (entry,) = json.loads((home / "hooks" / "ralphctl-loop.json").read_text())["hooks"]["agentStop"]
    assert entry == {
        "type": "command",
        "bash": f"{HOOK.command} --format copilot",
        "timeoutSec": 30,
    }
    assert (tmp_path / ".copilot" / "session-state").is_dir()  # sessions stay the user's
    assert not (tmp_path / ".copilot" / "hooks").exists()


def test_an_isolated_run_keeps_our_hook_only_while_it_is_a_hook_mode_run(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    request = AgentRequest(
        prompt="go", workdir=tmp_path, iteration=1, session_id="s", isolate_config=True
    )
    hooked = CopilotAdapter().build_command(replace(request, stop_hook=HOOK))
    run_hook = Path(hooked.env["COPILOT_HOME"]) / "hooks" / "ralphctl-loop.json"
    assert run_hook.is_file()

    plain = CopilotAdapter().build_command(request)

    assert plain.env["COPILOT_HOME"] == hooked.env["COPILOT_HOME"]  # one per work dir
    assert not run_hook.exists()


def test_session_flags_are_refused_in_a_same_session_loop(tmp_path):
    request = AgentRequest(
        prompt="go",
        workdir=tmp_path,
        iteration=1,
        session_id="s",
        stop_hook=HOOK,
        extra_args=("--resume", "other"),
    )
    with pytest.raises(ValueError, match="a same-session loop sets the session itself"):
        CopilotAdapter().build_command(request)
