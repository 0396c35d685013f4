"""GeminiAdapter in same-session (hook) mode: the run's AfterAgent hook goes into the settings
of a home of ralphctl's own, never into the user's files."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentRequest, StopHook
from ralphctl.agents.gemini import SPEC, GeminiAdapter
from ralphctl.agents.gemini_hooks import INSTALLED_HOOK_NAME, with_run_hook

SESSION = "5e55a1d0-0000-4000-8000-000000000001"
HOOK = StopHook(
    command="/usr/bin/python3 -I -S /x/hook/__main__.py stop", timeout_s=30, max_blocks=6
)
USER_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
    "hooksConfig": {"disabled": ["slow-hook"]},
}


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's ``~/.gemini`` with settings, a login, sessions and a command."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RALPHCTL_GEMINI_BIN", "/opt/gemini")
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    directory = tmp_path / "home" / ".gemini"
    (directory / "tmp" / "project" / "chats").mkdir(parents=True)
    (directory / "commands").mkdir()
    (directory / "settings.json").write_text(json.dumps(USER_SETTINGS))
    (directory / "oauth_creds.json").write_text("{}")
    return directory


def build(**fields: Any) -> tuple[list[str], dict[str, str]]:
    base = AgentRequest(
        prompt="Go.", workdir=Path("/w"), iteration=1, session_id=SESSION, stop_hook=HOOK
    )
    command = GeminiAdapter().build_command(replace(base, **fields))
    return list(command.argv), dict(command.env)


def test_gemini_can_keep_one_session_going() -> None:
    assert SPEC.capabilities.same_session
    assert SPEC.capabilities.resume


def test_the_run_sees_the_users_home_with_our_hook_added_and_theirs_kept(user_dir: Path) -> None:
    before = {path: path.read_bytes() for path in user_dir.rglob("*") if path.is_file()}

    argv, env = build()

    assert argv[argv.index("--session-id") + 1] == SESSION
    home = Path(env["GEMINI_CLI_HOME"]) / ".gemini"
    assert home.parent != user_dir.parent
    settings = json.loads((home / "settings.json").read_text())
    assert settings["security"] == USER_SETTINGS["security"]
    theirs, ours = settings["hooks"]["AfterAgent"]
    assert theirs == USER_SETTINGS["hooks"]["AfterAgent"][0]
    (hook,) = ours["hooks"]
    assert hook["name"] == "ralphctl-loop"
    assert hook["command"] == f"{HOOK.command} --format gemini"
    assert hook["timeout"] == 30_000
    assert hook["env"] == {"RALPHCTL_HOOK_SOCKET": "${RALPHCTL_HOOK_SOCKET:-}"}
    assert settings["hooksConfig"] == {
        "disabled": ["slow-hook", INSTALLED_HOOK_NAME],
        "enabled": True,
    }
    for name in ("tmp", "commands", "oauth_creds.json"):
        assert os.readlink(home / name) == str(user_dir / name)
    after = {path: path.read_bytes() for path in user_dir.rglob("*") if path.is_file()}
    assert after == before


def test_a_resumed_run_resumes_in_the_same_home(user_dir: Path) -> None:
    _, first = build()
    argv, again = build(resume=True)
    assert argv[argv.index("--resume") + 1] == SESSION
    assert again["GEMINI_CLI_HOME"] == first["GEMINI_CLI_HOME"]


def test_an_entry_the_user_removed_is_unlinked(user_dir: Path) -> None:
    _, env = build()
    (user_dir / "oauth_creds.json").unlink()
    build()
    assert not (Path(env["GEMINI_CLI_HOME"]) / ".gemini" / "oauth_creds.json").is_symlink()


def test_an_isolated_run_has_the_users_auth_and_our_hook_only(user_dir: Path) -> None:
    _, env = build(isolate_config=True)
    settings = json.loads((Path(env["GEMINI_CLI_HOME"]) / ".gemini" / "settings.json").read_text())
    assert settings["security"] == USER_SETTINGS["security"]
    ((hook,),) = [group["hooks"] for group in settings["hooks"]["AfterAgent"]]
    assert hook["name"] == "ralphctl-loop"


def test_settings_that_are_not_plain_json_are_refused_by_name(user_dir: Path) -> None:
    (user_dir / "settings.json").write_text('{\n  // my model\n  "model": {}\n}\n')
    with pytest.raises(ValueError, match=r"settings.json is not a plain JSON object \(comments"):
        build()


@pytest.mark.parametrize("flag", ["--session-id", "--resume"])
def test_the_session_is_ours_alone(user_dir: Path, flag: str) -> None:
    with pytest.raises(ValueError, match=f"{flag}: a same-session loop sets the session itself"):
        build(extra_args=(flag, "other"))


def test_adding_our_hook_twice_keeps_one_disabled_entry() -> None:
    once = with_run_hook({}, {"hooks": []})
    twice = with_run_hook(once, {"hooks": []})
    assert twice["hooksConfig"]["disabled"] == [INSTALLED_HOOK_NAME]
    assert with_run_hook({"hooks": "broken"}, {"hooks": []})["hooks"] == {
        "AfterAgent": [{"hooks": []}]
    }
