"""Copilot CLI's final text at an ``agentStop``: its ``events.jsonl``, once it has caught up.

CLI 1.0.102 appends a session's events to ``session-state/<id>/events.jsonl`` in batches
(about every 100 ms): when its agentStop hook starts, the turn's last ``assistant.message``
is often not in the file yet (at the first stop there is no file yet). The batch that brings
it also brings the ``hook.start`` event of this very stop, whose ``data.input.timestamp`` is
the stop's ``timestamp``. So the hook waits (up to ``WAIT_S``) while the file is behind, and
then takes the last assistant message before this stop's ``hook.start``.

Behind means: no file yet in an existing session folder, or an agentStop ``hook.start`` of
another stop after the last assistant message (the previous stop's). A file with neither
(written by something else than the CLI) is read as it is.
"""

from __future__ import annotations

import os
import time

from ralphctl.hook.jsonio import loads
from ralphctl.hook.regular import read_regular

#: How long the hook waits for the CLI to write the turn's last message.
WAIT_S = 2.0
POLL_S = 0.02
TAIL_BYTES = 2 * 1024 * 1024
EVENTS_FILE = "events.jsonl"


def final_text(path: str | None, stop_timestamp: int | None, wait_s: float = WAIT_S) -> str:
    """The text of the turn's last assistant message ("" if it has none, or there is no
    transcript), waiting while the transcript is behind the stop at ``stop_timestamp``
    (without one, nothing tells when it has caught up: no wait)."""
    if not path:
        return ""
    path = os.path.expanduser(path)
    deadline = time.monotonic() + (wait_s if stop_timestamp is not None else 0.0)
    while True:
        text, behind = _read(path, stop_timestamp)
        if not behind or time.monotonic() >= deadline:
            return text
        time.sleep(POLL_S)


def _read(path: str, stop_timestamp: int | None) -> tuple[str, bool]:
    """The last assistant text so far (before this stop's ``hook.start``), and whether the
    file is behind the stop."""
    try:
        tail = read_regular(path, TAIL_BYTES, tail=True)
    except OSError:
        return "", False
    if tail is None:  # no file yet: behind, if the CLI made the session's folder
        folder, name = os.path.split(path)
        return "", name == EVENTS_FILE and os.path.isdir(folder)
    text, other_stop_after = "", False
    for line in tail.split(b"\n"):
        record = _record(line)
        if record is None:
            continue
        kind = record.get("type")
        if kind == "assistant.message" and (content := _content(record)) is not None:
            text, other_stop_after = content, False
        elif kind == "hook.start":
            stamp = _stop_stamp(record)
            if stamp is not None and stamp == stop_timestamp:
                return text, False
            other_stop_after = other_stop_after or stamp is not None
    return text, other_stop_after


def _record(line: bytes) -> dict[str, object] | None:
    if b'"assistant.message"' not in line and b'"hook.start"' not in line:
        return None
    try:
        record = loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _content(record: dict[str, object]) -> str | None:
    """An assistant message's text ("" for tool calls only); None for a sub-agent's."""
    data = record.get("data")
    if not isinstance(data, dict) or data.get("parentToolCallId"):
        return None
    content = data.get("content")
    return content if isinstance(content, str) else ""


def _stop_stamp(record: dict[str, object]) -> int | None:
    """The stop ``timestamp`` of an agentStop ``hook.start`` (None for another hook's)."""
    data = record.get("data")
    if not isinstance(data, dict) or data.get("hookType") != "agentStop":
        return None
    hook_input = data.get("input")
    stamp = hook_input.get("timestamp") if isinstance(hook_input, dict) else None
    return stamp if type(stamp) is int else None
