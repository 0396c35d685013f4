"""The session transcript (JSONL), read only as a fallback: it is written asynchronously.

Claude Code writes each content block of an assistant message as its own line, all sharing
``message.id``; some versions repeat earlier blocks. Old CLIs (before 2.1.47) send no
``last_assistant_message``, so the hook reads the final text from the transcript's tail.
Copilot CLI never sends the final text: its ``events.jsonl`` has one ``assistant.message``
line per message (``data.content``). Cursor's transcript lines carry ``role`` and
``message.content``; Codex's rollout lines ``payload`` with ``role`` and ``content``.
Gemini CLI 0.61.0 appends one record per line to ``chats/session-*.jsonl``: a message is a
``"type": "gemini"`` record (``content``: its text, or a list of parts), appended again
under the same ``id`` when it is updated; its AfterAgent ``prompt_response`` holds every
reply since the process started, so the hook reads a Gemini loop's last text here.
"""

from __future__ import annotations

import os

from ralphctl.hook.jsonio import loads
from ralphctl.hook.regular import read_regular

#: How much of the transcript's end is read for the final message.
TAIL_BYTES = 2 * 1024 * 1024
#: How much of it is searched for an arming token (the arming turn is the current one).
SEARCH_BYTES = 64 * 1024 * 1024
#: Tracker times are whole seconds; transcript lines this close to the arming may precede it.
LAG_TOLERANCE_S = 2.0
#: How many of the last lines are read for the newest timestamp.
NEWEST_OF_LINES = 50
#: Content block types holding the assistant's text (Codex says ``output_text``).
_TEXT_BLOCKS = ("text", "output_text")


def last_assistant_text(path: str | None) -> str:
    """The text blocks of the last assistant message, joined; "" if there is none or no file.

    A last message of tool calls only has no text, so it can never complete a loop.
    """
    tail = _tail(path, TAIL_BYTES)
    if not tail:
        return ""
    lines = tail.split(b"\n")
    last_id: object = None
    texts: list[str] = []
    for line in lines:
        message = _assistant_message(line)
        if message is None:
            continue
        message_id = message.get("id")
        if message_id != last_id or message_id is None:
            last_id, texts = message_id, []
        for block in _blocks(message):
            text = block.get("text")
            if block.get("type") in _TEXT_BLOCKS and isinstance(text, str) and text not in texts:
                texts.append(text)
    return "\n".join(texts)


def may_have_armed(
    path: str | None, token: str, armed_at: float, final_text: str | None = None
) -> bool:
    """Could the session of this transcript be the one that printed ``token`` at ``armed_at``?

    Yes if the token is there. Yes if the transcript has not caught up with the arming yet
    (it is written asynchronously: at the first Stop the arming tool's output is often not
    in it). No once it shows later activity without the token (its lines' timestamps, else
    the file's modification time): that is another session of the same project. Yes if a
    given transcript cannot be read. A CLI that gives no transcript at all but the final
    text (Codex may): the token must be in it; with neither, yes.
    """
    tail = _tail(path, SEARCH_BYTES)
    if tail is None:
        return bool(path) or final_text is None or token in final_text
    if token.encode() in tail:
        return True
    newest = _newest_timestamp(tail)
    if newest is None:
        newest = _modified(path)
    return newest is None or newest <= armed_at + LAG_TOLERANCE_S


def _modified(path: str | None) -> float | None:
    try:
        return os.stat(os.path.expanduser(path or "")).st_mtime
    except (OSError, ValueError):
        return None


def _newest_timestamp(tail: bytes) -> float | None:
    moments = [_timestamp(line) for line in tail.rstrip(b"\n").split(b"\n")[-NEWEST_OF_LINES:]]
    return max((moment for moment in moments if moment is not None), default=None)


def _timestamp(line: bytes) -> float | None:
    """The ``timestamp`` of one transcript line, if it has a valid one."""
    from ralphctl.hook.clock import epoch

    try:
        record = loads(line)
        stamp = record.get("timestamp") if isinstance(record, dict) else None
        return epoch(stamp) if isinstance(stamp, str) else None
    except (ValueError, RecursionError):
        return None


def _tail(path: str | None, limit: int) -> bytes | None:
    """The last ``limit`` bytes of the file, from a line start (a cut first line is dropped);
    None if it cannot be read or is not a regular file (a FIFO would never end)."""
    if not path:
        return None
    try:
        data = read_regular(os.path.expanduser(path), limit + 1, tail=True)
    except OSError:
        return None
    if data is None or len(data) <= limit:
        return data
    return data.partition(b"\n")[2]


def _assistant_message(line: bytes) -> dict[str, object] | None:
    """The assistant message of one line, as ``{"id", "content"}``, in any CLI's spelling."""
    if b"assistant" not in line and b'"gemini"' not in line:
        return None
    try:
        record = loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("isSidechain") is True:
        return None
    kind = record.get("type")
    if kind == "assistant" or record.get("role") == "assistant":  # Claude Code, Cursor
        message = record.get("message", record)
    elif kind == "assistant.message":  # Copilot CLI
        message = record.get("data")
        if isinstance(message, dict) and message.get("parentToolCallId"):
            return None  # a sub-agent's message
    elif kind == "gemini":  # Gemini CLI
        message = {"id": record.get("id"), "content": _gemini_content(record.get("content"))}
    elif kind == "response_item":  # Codex
        message = record.get("payload")
        if not isinstance(message, dict) or message.get("role") != "assistant":
            return None
    else:
        return None
    if not isinstance(message, dict):
        return None
    return {"id": message.get("id", message.get("messageId")), "content": message.get("content")}


def _gemini_content(content: object) -> object:
    """Gemini's content as text blocks: a string, or parts whose ``text`` is not a thought."""
    if not isinstance(content, list):
        return content
    return [
        {"type": "text", "text": part.get("text")}
        for part in content
        if isinstance(part, dict) and part.get("thought") is not True
    ]


def _blocks(message: dict[str, object]) -> list[dict[str, object]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict)]
