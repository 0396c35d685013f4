"""``isolate_agent_config`` for Claude Code: ``--setting-sources project,local``, checked on the
command line and against the real CLI (the user's hooks and MCP servers do not run)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from ralphctl.agents.base import AgentCommand, AgentRequest
from ralphctl.agents.claude import ClaudeAdapter
from tests.mockapi import Reply
from tests.realcli.harness import RealClaude


def command(*extra: str, isolate: bool) -> AgentCommand:
    request = AgentRequest(
        prompt="Say done.",
        workdir=Path("/w"),
        iteration=1,
        session_id=str(uuid.uuid4()),
        extra_args=extra,
        isolate_config=isolate,
    )
    return ClaudeAdapter().build_command(request)


def argv(*extra: str, isolate: bool) -> Sequence[str]:
    return command(*extra, isolate=isolate).argv


def sources(command: Sequence[str]) -> list[str]:
    return [command[i + 1] for i, arg in enumerate(command) if arg == "--setting-sources"]


def test_an_isolated_run_reads_only_the_project_and_local_settings() -> None:
    assert sources(argv(isolate=True)) == ["project,local"]


def test_a_run_that_is_not_isolated_reads_every_settings_file() -> None:
    assert sources(argv(isolate=False)) == []


def test_the_users_own_setting_sources_win() -> None:
    command = argv("--setting-sources", "local", isolate=True)

    assert sources(command) == ["local"]


def test_the_users_own_setting_sources_win_when_written_with_an_equals_sign() -> None:
    command = argv("--setting-sources=project", isolate=True)

    assert sources(command) == []
    assert "--setting-sources=project" in command


# --- against the real CLI --------------------------------------------------------------------


def hook(marks: Path, name: str) -> dict[str, object]:
    """A hook group that leaves the file ``marks/name`` behind when it runs."""
    return {"hooks": [{"type": "command", "command": f"touch {marks / name}"}]}


def configure_everything(claude: RealClaude, marks: Path) -> None:
    """User hooks and a user MCP server that leave marks, and a project Stop hook."""
    user_settings = {"hooks": {"SessionStart": [hook(marks, "user-hook")]}}
    (claude.home / ".claude").mkdir(exist_ok=True)
    (claude.home / ".claude" / "settings.json").write_text(json.dumps(user_settings))
    server = {"command": sys.executable, "args": ["-c", f"open({str(marks / 'user-mcp')!r}, 'w')"]}
    config = {"mcpServers": {"marker": server}, "hasCompletedOnboarding": True}
    (claude.home / ".claude" / ".claude.json").write_text(json.dumps(config))
    project_settings = {"hooks": {"Stop": [hook(marks, "project-hook")]}}
    (claude.project / ".claude").mkdir()
    (claude.project / ".claude" / "settings.json").write_text(json.dumps(project_settings))


def run_with_everything_configured(
    claude: RealClaude, monkeypatch: pytest.MonkeyPatch, *, isolate: bool
) -> list[str]:
    """The marks left by a run of the adapter's command."""
    marks = claude.project.parent / "marks"
    marks.mkdir()
    configure_everything(claude, marks)
    claude.server.set_script(Reply("Done."))
    monkeypatch.setenv("RALPHCTL_CLAUDE_BIN", str(claude.binary))
    run = command(isolate=isolate)
    finished = subprocess.run(
        run.argv,
        input=run.stdin,
        cwd=claude.project,
        env={**claude.env, **run.env},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    return sorted(path.name for path in marks.iterdir())


@pytest.mark.real_cli
def test_without_isolation_the_users_hooks_and_mcp_servers_run(
    real_claude: RealClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_with_everything_configured(real_claude, monkeypatch, isolate=False) == [
        "project-hook",
        "user-hook",
        "user-mcp",
    ]


@pytest.mark.real_cli
def test_an_isolated_run_keeps_the_project_hooks_only(
    real_claude: RealClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_with_everything_configured(real_claude, monkeypatch, isolate=True) == [
        "project-hook"
    ]
