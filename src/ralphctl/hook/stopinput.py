"""The Stop hook's stdin: one JSON object, read defensively across agent CLI versions.

Claude Code 2.1.100 sends session_id, transcript_path, cwd, permission_mode,
hook_event_name, stop_hook_active and last_assistant_message; 2.1.330 adds prompt_id,
effort, background_tasks and session_crons; Codex adds turn_id and model; Gemini's
AfterAgent sends prompt_response instead of last_assistant_message. Unknown fields are
ignored and a field of the wrong type counts as absent.
"""

from __future__ import annotations

import os
import time

#: Far above any real Stop input (a final message is at most a few hundred KB).
MAX_INPUT_BYTES = 16 * 1024 * 1024
#: Claude Code writes the event and closes stdin at once; a stdin left open this long is not
#: waited for (the hook must answer well within its own lock timeout).
READ_TIMEOUT_S = 5.0
_CHUNK = 1024 * 1024


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
