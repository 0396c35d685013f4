"""The Stop hook's stdin: one JSON object, read defensively across agent CLIs and versions.

Each agent names the same facts its own way; ``parse(raw, agent)`` maps them to a
``StopEvent``. Unknown fields are ignored and a field of the wrong type counts as absent.

- Claude Code 2.1.100 (``Stop``): session_id, transcript_path, cwd, permission_mode,
  hook_event_name, stop_hook_active, last_assistant_message; 2.1.330 adds prompt_id,
  effort, background_tasks and session_crons.
- Codex 0.169.0 (``Stop``): the same names plus turn_id and model; transcript_path and
  last_assistant_message may be null.
- Gemini CLI 0.61.0 (``AfterAgent``): session_id, transcript_path, cwd, hook_event_name,
  timestamp, prompt, prompt_response (the final text), stop_hook_active.
- Copilot CLI 1.0.102 (``agentStop``): sessionId, timestamp, cwd, transcriptPath,
  stopReason, stop_hook_active; no event name and no final text (read from the transcript).
- Cursor (``stop``): conversation_id (also session_id in newer versions), generation_id,
  hook_event_name, workspace_roots, transcript_path (may be null), status
  (completed/aborted/error) and loop_count (the follow-ups already sent); no final text and
  no stop_hook_active: a stop with loop_count > 0 follows one of our follow-ups.
- OpenCode 1.18.33 has no hook: ralphctl's plugin (``plugin/assets/opencode/``) sends, at
  ``session.idle``, hook_event_name "session.idle", session_id (``ses_…``), cwd,
  last_assistant_message, status (completed/aborted/error, from the last assistant message)
  and stop_hook_active (the idle follows the plugin's own prompt).
"""

from __future__ import annotations

import os
import time

#: The agent CLIs by output format (``--format``), for messages.
CLI_NAMES = {
    "claude": "Claude Code",
    "codex": "Codex",
    "gemini": "Gemini CLI",
    "copilot": "Copilot CLI",
    "cursor": "Cursor",
    "opencode": "OpenCode",
}
#: Cursor's ``status`` of a stop that ended the turn normally; others are no completion.
COMPLETED = "completed"
#: Far above any real Stop input (a final message is at most a few hundred KB).
MAX_INPUT_BYTES = 16 * 1024 * 1024
#: Claude Code writes the event and closes stdin at once; a stdin left open this long is not
#: waited for (the hook must answer well within its own lock timeout).
READ_TIMEOUT_S = 5.0
_CHUNK = 1024 * 1024


class StopInputError(ValueError):
    """Stdin is not one JSON object we can use."""


class StopEvent:
    """The fields the hook uses; ``final_text`` is None when the CLI did not send it.

    ``status`` is None unless the CLI says how the turn ended (Cursor: "completed",
    "aborted", "error"); ``loop_count`` is Cursor's count of follow-ups already sent;
    ``timestamp`` Copilot's stop time (ms), which names the stop in its transcript.
    """

    __slots__ = (
        "cwd",
        "final_text",
        "hook_event_name",
        "loop_count",
        "session_id",
        "status",
        "stop_hook_active",
        "timestamp",
        "transcript_path",
    )

    def __init__(
        self,
        *,
        session_id: str | None = None,
        cwd: str | None = None,
        transcript_path: str | None = None,
        hook_event_name: str | None = None,
        stop_hook_active: bool = False,
        final_text: str | None = None,
        status: str | None = None,
        loop_count: int | None = None,
        timestamp: int | None = None,
    ) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.transcript_path = transcript_path
        self.hook_event_name = hook_event_name
        self.stop_hook_active = stop_hook_active
        self.final_text = final_text
        self.status = status
        self.loop_count = loop_count
        self.timestamp = timestamp

    @property
    def completed_turn(self) -> bool:
        """False when the CLI says the turn was aborted or failed: never a completion."""
        return self.status is None or self.status == COMPLETED


def read(fd: int, limit: int, timeout: float = READ_TIMEOUT_S) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of ``fd`` until end of file, and whether the end came before the
    ``timeout`` (seconds, in total): a writer that never closes cannot hang the hook."""
    import select

    poller = select.poll()
    poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), False
        if not poller.poll(max(1, round(left * 1000))):
            continue
        chunk = os.read(fd, min(_CHUNK, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), True


def parse(raw: bytes, agent: str = "claude") -> StopEvent:
    """The Stop input of ``agent`` (an output format name); StopInputError if it is no
    JSON object. An unknown agent is read as Claude Code's."""
    if len(raw) > MAX_INPUT_BYTES:
        raise StopInputError(f"stdin is larger than {MAX_INPUT_BYTES} bytes")
    if not raw.strip():
        raise StopInputError("stdin is empty")
    from ralphctl.hook.jsonio import loads

    try:
        data = loads(raw)
    except (ValueError, RecursionError) as exc:
        raise StopInputError(f"stdin is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise StopInputError(f"stdin is JSON but not an object ({type(data).__name__})")
    return _NORMALISERS.get(agent, _claude)(data)


def _claude(data: dict[str, object]) -> StopEvent:
    """Claude Code and Codex; also the default, which reads Gemini's final text too (as
    before formats were told apart)."""
    final = _text(data, "last_assistant_message")
    return StopEvent(
        session_id=_text(data, "session_id"),
        cwd=_text(data, "cwd"),
        transcript_path=_text(data, "transcript_path"),
        hook_event_name=_text(data, "hook_event_name"),
        stop_hook_active=data.get("stop_hook_active") is True,
        final_text=final if final is not None else _text(data, "prompt_response"),
    )


def _gemini(data: dict[str, object]) -> StopEvent:
    event = _claude(data)
    event.final_text = _text(data, "prompt_response")
    return event


def _copilot(data: dict[str, object]) -> StopEvent:
    timestamp = data.get("timestamp")
    return StopEvent(
        session_id=_first_text(data, "sessionId", "session_id"),
        cwd=_text(data, "cwd"),
        transcript_path=_first_text(data, "transcriptPath", "transcript_path"),
        hook_event_name=_first_text(data, "hookEventName", "hook_event_name"),
        stop_hook_active=data.get("stop_hook_active") is True or data.get("stopHookActive") is True,
        timestamp=timestamp if type(timestamp) is int else None,
    )


def _cursor(data: dict[str, object]) -> StopEvent:
    loop_count = data.get("loop_count")
    count = loop_count if type(loop_count) is int and loop_count >= 0 else None
    return StopEvent(
        session_id=_first_text(data, "conversation_id", "session_id"),
        cwd=_text(data, "cwd") or _first_root(data.get("workspace_roots")),
        transcript_path=_text(data, "transcript_path"),
        hook_event_name=_text(data, "hook_event_name"),
        stop_hook_active=data.get("stop_hook_active") is True or bool(count),
        status=_text(data, "status"),
        loop_count=count,
    )


def _opencode(data: dict[str, object]) -> StopEvent:
    event = _claude(data)
    event.final_text = _text(data, "last_assistant_message")
    event.status = _text(data, "status")
    return event


_NORMALISERS = {
    "claude": _claude,
    "codex": _claude,
    "gemini": _gemini,
    "copilot": _copilot,
    "cursor": _cursor,
    "opencode": _opencode,
}


def _text(data: dict[str, object], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _first_text(data: dict[str, object], *keys: str) -> str | None:
    """The first of ``keys`` holding a non-empty string; else the first string (maybe "")."""
    texts = [value for key in keys if (value := _text(data, key)) is not None]
    return next((value for value in texts if value), texts[0] if texts else None)


def _first_root(roots: object) -> str | None:
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        return roots[0]
    return None
