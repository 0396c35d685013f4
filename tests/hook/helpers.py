"""Run the Stop hook as Claude Code does, and build its inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import ralphctl.hook
from ralphctl.hook.frontmatter import Scalar, parse, render
from ralphctl.hook.paths import tracker_path

#: The hook as the plugin runs it: ``python -I -S HOOK_FILE stop``.
HOOK_FILE = Path(ralphctl.hook.__file__).with_name("__main__.py")
SESSION = "5e55a1d0-0000-4000-8000-00000000c0de"
OTHER_SESSION = "0ther000-0000-4000-8000-000000000001"


def stop_event(session: str = SESSION, text: str | None = "Still working.", **extra: Any) -> bytes:
    """A Stop input as Claude Code 2.1.330 sends it (``text=None`` drops the final text)."""
    event: dict[str, Any] = {
        "session_id": session,
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": "/",
        "permission_mode": "acceptEdits",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "prompt_id": "prompt-1",
        "effort": {"level": "high"},
        "background_tasks": [],
        "session_crons": [],
    }
    if text is not None:
        event["last_assistant_message"] = text
    event.update(extra)
    return json.dumps(event).encode()


def hook_env(project: Path, session: str | None = SESSION, **extra: str) -> dict[str, str]:
    """The hook's environment under Claude Code: project dir and session id, no history."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "RALPHCTL"))}
    env |= {"CLAUDE_PROJECT_DIR": str(project), "RALPHCTL_HOOK_STORE": "off"}
    if session is not None:
        env["CLAUDE_CODE_SESSION_ID"] = session
    return env | extra


def run_hook(
    stdin: bytes, env: dict[str, str], *args: str, command: list[str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``python -m ralphctl.hook stop ARGS`` with ``stdin``; its cwd is the filesystem root,
    as if the agent had ``cd``-ed away (the project comes from the environment)."""
    argv = command or [sys.executable, "-m", "ralphctl.hook", "stop"]
    return subprocess.run(
        [*argv, *args], input=stdin, env=env, capture_output=True, check=False, cwd="/"
    )


def decision(done: subprocess.CompletedProcess[bytes]) -> dict[str, Any] | None:
    """The hook's stdout as Claude Code reads it: nothing, or exactly one JSON object."""
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    if not out.strip():
        return None
    assert out.startswith("{"), out
    assert out.count("\n") == 1, out
    parsed = json.loads(out)
    assert isinstance(parsed, dict)
    return parsed


def answer(done: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    """The JSON object the hook printed (there must be one)."""
    printed = decision(done)
    assert printed is not None, done.stderr
    return printed


def fields_of(path: Path) -> dict[str, Scalar]:
    return parse(path.read_text())[0]


def body_of(path: Path) -> str:
    return parse(path.read_text())[1]


def session_tracker(project: Path, session: str = SESSION) -> Path:
    return Path(tracker_path(str(project), session))


def edit_fields(path: Path, **changes: Scalar) -> None:
    fields, body = parse(path.read_text())
    path.write_text(render(fields | changes, body))


def arm_cli(
    project: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ralphctl.hook", "arm", *args],
        env=env or hook_env(project),
        capture_output=True,
        text=True,
        check=False,
        cwd=project,
    )
