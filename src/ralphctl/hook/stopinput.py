"""The Stop hook's stdin: one JSON object, read defensively across agent CLI versions.

Claude Code 2.1.100 sends session_id, transcript_path, cwd, permission_mode,
hook_event_name, stop_hook_active and last_assistant_message; 2.1.330 adds prompt_id,
effort, background_tasks and session_crons; Codex adds turn_id and model; Gemini's
AfterAgent sends prompt_response instead of last_assistant_message. Unknown fields are
ignored and a field of the wrong type counts as absent.
"""

from __future__ import annotations

#: Far above any real Stop input (a final message is at most a few hundred KB).
MAX_INPUT_BYTES = 16 * 1024 * 1024


class StopInputError(ValueError):
    """Stdin is not one JSON object we can use."""


class StopEvent:
    """The fields the hook uses; ``final_text`` is None when the CLI did not send it."""

    __slots__ = (
        "cwd",
        "final_text",
        "hook_event_name",
        "session_id",
        "stop_hook_active",
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
    ) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.transcript_path = transcript_path
        self.hook_event_name = hook_event_name
        self.stop_hook_active = stop_hook_active
        self.final_text = final_text


def parse(raw: bytes) -> StopEvent:
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
    final = _text(data, "last_assistant_message")
    return StopEvent(
        session_id=_text(data, "session_id"),
        cwd=_text(data, "cwd"),
        transcript_path=_text(data, "transcript_path"),
        hook_event_name=_text(data, "hook_event_name"),
        stop_hook_active=data.get("stop_hook_active") is True,
        final_text=final if final is not None else _text(data, "prompt_response"),
    )


def _text(data: dict[str, object], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None
