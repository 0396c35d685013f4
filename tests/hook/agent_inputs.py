"""Each agent CLI's Stop hook input, as its pinned version sends it, and its hook environment.

Field names are the CLIs' own: Codex 0.169.0 (``codex-rs/hooks`` stop.command.input schema),
Gemini CLI 0.61.0 (``fireAfterAgentEvent`` in its bundle), Copilot CLI 1.0.102 (recorded from
the real CLI: ``agentStop`` command hook, bring-your-own-key mode), Cursor (its hooks
documentation: ``stop`` with ``status`` and ``loop_count``; no Cursor CLI is pinned here),
OpenCode (what ralphctl's plugin sends at ``session.idle``, recorded with OpenCode 1.18.33).
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.hook.helpers import SESSION, stop_event

AGENTS = ("claude", "codex", "gemini", "copilot", "cursor", "opencode")
#: What each agent's hook answers a block with: the field holding the next instruction.
INSTRUCTION_FIELD = {
    "claude": "reason",
    "codex": "reason",
    "gemini": "reason",
    "copilot": "reason",
    "cursor": "followup_message",
    "opencode": "reason",
}
#: The agents whose input carries the final text (the others' is read from the transcript).
SENDS_FINAL_TEXT = ("claude", "codex", "gemini", "opencode")


def agent_stop(
    agent: str,
    project: Path,
    *,
    session: str = SESSION,
    text: str | None = "Still working.",
    transcript: Path | None = None,
    again: bool = False,
    **extra: Any,
) -> bytes:
    """One Stop input of ``agent`` in ``project``; ``again`` marks a stop that follows one of
    our blocks (``stop_hook_active``, or Cursor's ``loop_count`` > 0). ``text`` only reaches
    agents that send it."""
    cwd, path = str(project), None if transcript is None else str(transcript)
    event: dict[str, Any]
    if agent == "claude":
        claude = stop_event(session, text, cwd=cwd, stop_hook_active=again)
        event = json.loads(claude) | ({"transcript_path": path} if path else {})
    elif agent == "codex":
        event = {
            "session_id": session,
            "turn_id": "019a7c2e-5b1d-7d62-9b7e-000000000002",
            "transcript_path": path,
            "cwd": cwd,
            "hook_event_name": "Stop",
            "model": "gpt-5.2-codex",
            "permission_mode": "acceptEdits",
            "stop_hook_active": again,
            "last_assistant_message": text,
        }
    elif agent == "gemini":
        event = {
            "session_id": session,
            "transcript_path": path or f"{project}/.gemini/chats/session-{session[:8]}.json",
            "cwd": cwd,
            "hook_event_name": "AfterAgent",
            "timestamp": "2026-11-23T22:23:16.431Z",
            "prompt": "Do the task in TASK.md.",
            "prompt_response": text,
            "stop_hook_active": again,
        }
    elif agent == "copilot":  # recorded from copilot 1.0.102
        event = {
            "sessionId": session,
            "timestamp": 1795472596499,
            "cwd": cwd,
            "transcriptPath": path or f"/nonexistent/session-state/{session}/events.jsonl",
            "stopReason": "end_turn",
            "stop_hook_active": again,
        }
    elif agent == "cursor":
        event = {
            "conversation_id": session,
            "generation_id": "26b45fb6-bdea-439c-b2dc-5e97ee00ecea",
            "model": "claude-4.5-sonnet",
            "hook_event_name": "stop",
            "cursor_version": "2.1.50",
            "workspace_roots": [cwd],
            "user_email": None,
            "transcript_path": path,
            "status": "completed",
            "loop_count": 1 if again else 0,
        }
    elif agent == "opencode":  # recorded from ralphctl's plugin in opencode 1.18.33
        event = {
            "hook_event_name": "session.idle",
            "session_id": session,
            "cwd": cwd,
            "last_assistant_message": text,
            "status": "completed",
            "stop_hook_active": again,
        }
    else:
        raise ValueError(agent)
    event.update(extra)
    return json.dumps(event).encode()


def agent_env(agent: str, project: Path, **extra: str) -> dict[str, str]:
    """The hook's environment under ``agent``: its own project variable where it sets one
    (Gemini, Cursor; Claude Code's also names the session), no history."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CLAUDE", "RALPHCTL", "GEMINI", "CURSOR"))
    }
    env["RALPHCTL_HOOK_STORE"] = "off"
    own = {
        "claude": {"CLAUDE_PROJECT_DIR": str(project), "CLAUDE_CODE_SESSION_ID": SESSION},
        "gemini": {"GEMINI_PROJECT_DIR": str(project)},
        "cursor": {"CURSOR_PROJECT_DIR": str(project)},
    }
    return env | own.get(agent, {}) | extra


def copilot_transcript(
    path: Path, *messages: str, tool_output: str = "", at: float | None = None
) -> Path:
    """A Copilot ``events.jsonl`` (1.0.102's event names) written at Unix time ``at`` (now):
    a user message, optionally a tool result holding ``tool_output``, then one
    ``assistant.message`` per text."""
    lines: list[dict[str, Any]] = [
        {"type": "session.start", "data": {"sessionId": SESSION, "copilotVersion": "1.0.102"}},
        {"type": "user.message", "data": {"content": "Do the task.", "turnId": "0"}},
    ]
    if tool_output:
        lines.append(
            {
                "type": "tool.execution_complete",
                "data": {"toolCallId": "call-1", "result": {"content": tool_output}},
            }
        )
    for number, text in enumerate(messages):
        lines.append(
            {
                "type": "assistant.message",
                "data": {"messageId": f"m{number}", "content": text, "toolRequests": []},
            }
        )
    moment = datetime.fromtimestamp(time.time() if at is None else at, UTC)
    stamp = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    stamped = [line | {"id": f"e{n}", "timestamp": stamp} for n, line in enumerate(lines)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in stamped))
    return path


def cursor_transcript(path: Path, *messages: str) -> Path:
    """A Cursor agent transcript: one JSON line per message, ``role`` and ``message.content``."""
    lines = [{"role": "user", "message": {"content": [{"type": "text", "text": "Do it."}]}}]
    lines += [
        {"role": "assistant", "message": {"content": [{"type": "text", "text": text}]}}
        for text in messages
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
