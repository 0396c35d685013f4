"""What Claude Code itself keeps of a session: ``<config dir>/projects/<project>/<id>.jsonl``.

Read to recover the usage of a run whose runner died before it read the run's ``result``
line. The file's ``assistant`` lines carry each API response's usage; a response written as
several lines (one per content block) shares its ``message.id`` and the last line wins
(research/claude-protocol.md §2.7). Subagents' lines (``isSidechain``) count too: they were
paid for. The file has no cost: the caller prices the tokens. Read line by line, lines over
``MAX_PARSED_LINE_BYTES`` skipped, so its size does not matter. A hook-mode iteration is part
of a longer session: only the responses written since it began (their ``timestamp``) count.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ralphctl.agents.claude_plugins import config_dir
from ralphctl.agents.process import MAX_PARSED_LINE_BYTES, LineSplitter
from ralphctl.domain.model import UNNAMED_MODEL, ModelTokens, TokenUsage

_SESSION_ID = re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_READ_BYTES = 1024 * 1024


def session_tokens(session_id: str, since: datetime | None = None) -> tuple[ModelTokens, ...]:
    """Tokens per model that Claude Code recorded for ``session_id`` (only the responses it
    wrote at or after ``since``, when given); empty when it kept no transcript of that session
    here (or the id is not a session id)."""
    path = transcript_path(session_id)
    if path is None:
        return ()
    usage: dict[str, tuple[str, TokenUsage]] = {}  # message id -> (model, its usage)
    splitter = LineSplitter(
        lambda line: _note(line, usage, since), max_line_bytes=MAX_PARSED_LINE_BYTES
    )
    with path.open("rb") as lines:
        while chunk := lines.read(_READ_BYTES):
            splitter.feed(chunk)
    splitter.flush()
    per_model: dict[str, TokenUsage] = {}
    for model, tokens in usage.values():
        per_model[model] = per_model.get(model, TokenUsage()) + tokens
    return tuple(ModelTokens(model, tokens) for model, tokens in per_model.items())


def transcript_path(session_id: str) -> Path | None:
    """Where Claude Code keeps the session's transcript, if it is there."""
    if not _SESSION_ID.fullmatch(session_id):
        return None
    found = sorted((config_dir() / "projects").glob(f"*/{session_id}.jsonl"))
    return found[0] if found and found[0].is_file() else None


def _note(line: bytes, usage: dict[str, tuple[str, TokenUsage]], since: datetime | None) -> None:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return
    if not isinstance(record, dict) or record.get("type") != "assistant":
        return
    if since is not None and not _written_since(record.get("timestamp"), since):
        return
    message = record.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
        return
    key = message.get("id") or record.get("uuid")
    model = message.get("model")
    if isinstance(key, str):
        usage[key] = (model if isinstance(model, str) else UNNAMED_MODEL, _tokens(message["usage"]))


def _written_since(timestamp: object, since: datetime) -> bool:
    """The record's ISO ``timestamp`` is at or after ``since``; False when it has none."""
    if not isinstance(timestamp, str):
        return False
    try:
        written = datetime.fromisoformat(timestamp)
    except ValueError:
        return False
    return written.tzinfo is not None and written >= since


def _tokens(usage: dict[str, Any]) -> TokenUsage:
    def count(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return TokenUsage(
        input=count("input_tokens"),
        output=count("output_tokens"),
        cache_read=count("cache_read_input_tokens"),
        cache_write=count("cache_creation_input_tokens"),
    )
