"""A same-session loop's inbox: the user's messages waiting for the next Stop that blocks.

``messages.json`` beside the tracker holds ``[{"seq": N, "text": "..."}, ...]`` (oldest
first). ``ralphctl tell`` appends to it (``post``) and the Stop hook empties it (``take``),
both under the tracker's lock, so that each message reaches exactly one continue message.
A missing inbox is empty; an unreadable or corrupt one is set aside (renamed ``.corrupt``)
with a warning and counts as empty: the hook fails open.
"""

from __future__ import annotations

import os

from ralphctl.atomic import write_atomic
from ralphctl.hook import jsonio
from ralphctl.hook.regular import read_regular

INBOX_NAME = "messages.json"
#: An inbox larger than this is not read (a message is at most 8000 characters).
MAX_INBOX_BYTES = 4 * 1024 * 1024


class CorruptInbox(ValueError):
    """The inbox is not a list of ``{"seq": int, "text": str}``."""


def inbox_path(tracker: str) -> str:
    return os.path.join(os.path.dirname(tracker), INBOX_NAME)


def post(tracker: str, seq: int, text: str) -> None:
    """Append one message (call under the tracker's lock); a corrupt inbox is replaced."""
    path = inbox_path(tracker)
    try:
        waiting = _read(path)
    except CorruptInbox:
        _set_aside(path)
        waiting = []
    waiting.append((seq, text))
    write_atomic(path, jsonio.dumps([{"seq": s, "text": t} for s, t in waiting]))


def take(tracker: str) -> tuple[list[tuple[int, str]], str | None]:
    """Empty the inbox (call under the tracker's lock): its messages, oldest first, and a
    problem to warn about (a corrupt inbox, set aside), or None."""
    path = inbox_path(tracker)
    try:
        waiting = _read(path)
    except CorruptInbox as exc:
        _set_aside(path)
        return [], f"{path} is corrupt ({exc}): set aside as {INBOX_NAME}.corrupt"
    if waiting:
        os.unlink(path)
    return waiting, None


def _read(path: str) -> list[tuple[int, str]]:
    try:
        raw = read_regular(path, MAX_INBOX_BYTES + 1)
    except OSError as exc:
        raise CorruptInbox(str(exc)) from None
    if raw is None:
        return []
    if len(raw) > MAX_INBOX_BYTES:
        raise CorruptInbox(f"larger than {MAX_INBOX_BYTES} bytes")
    try:
        document = jsonio.loads(raw)
    except ValueError as exc:
        raise CorruptInbox(f"not JSON: {exc}") from None
    if not isinstance(document, list):
        raise CorruptInbox("not a list")
    waiting = []
    for entry in document:
        seq = entry.get("seq") if isinstance(entry, dict) else None
        text = entry.get("text") if isinstance(entry, dict) else None
        if not isinstance(seq, int) or isinstance(seq, bool) or not isinstance(text, str):
            raise CorruptInbox(f"not a message: {str(entry)[:60]!r}")
        waiting.append((seq, text))
    return waiting


def _set_aside(path: str) -> None:
    try:
        os.replace(path, path + ".corrupt")
    except OSError:
        try:
            os.unlink(path)
        except OSError:
            pass
