"""What the Codex CLI itself keeps of a thread: ``$CODEX_HOME/sessions/YYYY/MM/DD/
rollout-<time>-<thread id>.jsonl`` (CLI 0.169.0).

Each line is ``{"timestamp", "type", "payload"}``. A ``token_usage_record`` line holds one
model response's ``usage`` (the same fields as ``turn.completed``); ``turn_context`` lines name
the model of the turns after them. Read for two things:

- the tokens of a run whose runner died before it read the closing ``turn.completed``
  (``session_tokens``, only the responses written since the iteration began);
- a resumed thread's totals so far (``thread_totals``): ``turn.completed`` reports the
  thread's running total, so a resumed run's own tokens are that total minus these.

Read line by line, lines over ``MAX_PARSED_LINE_BYTES`` skipped, so the file's size does not
matter. The file has no cost: the caller prices the tokens.
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ralphctl.agents.process import MAX_PARSED_LINE_BYTES, LineSplitter
from ralphctl.domain.model import UNNAMED_MODEL, ModelTokens, TokenUsage

_THREAD_ID = re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_READ_BYTES = 1024 * 1024


def codex_home() -> Path:
    """``$CODEX_HOME``, else ``~/.codex``."""
    configured = os.environ.get("CODEX_HOME")
    return Path(configured) if configured else Path.home() / ".codex"


def rollout_path(thread_id: str, home: Path | None = None) -> Path | None:
    """Where Codex keeps the thread's rollout file, if it is there."""
    if not _THREAD_ID.fullmatch(thread_id):
        return None
    base = home or codex_home()
    found = sorted((base / "sessions").glob(f"*/*/*/rollout-*-{thread_id}.jsonl"))
    return found[0] if found and found[0].is_file() else None


def session_tokens(thread_id: str, since: datetime | None = None) -> tuple[ModelTokens, ...]:
    """Tokens per model that Codex recorded for ``thread_id`` (only the responses written at
    or after ``since``, when given); empty when it kept no rollout of that thread here."""
    per_model: dict[str, TokenUsage] = {}
    for model, tokens in _responses(rollout_path(thread_id), since):
        per_model[model] = per_model.get(model, TokenUsage()) + tokens
    return tuple(ModelTokens(model, tokens) for model, tokens in per_model.items())


def thread_totals(thread_id: str, home: Path | None = None) -> TokenUsage:
    """Every token the thread used so far (zero for a thread Codex kept no rollout of)."""
    responses = _responses(rollout_path(thread_id, home), None)
    return sum((tokens for _, tokens in responses), TokenUsage())


def _responses(path: Path | None, since: datetime | None) -> list[tuple[str, TokenUsage]]:
    """(model, tokens) of each response the rollout file records, in order."""
    if path is None:
        return []
    reader = _RolloutReader(since)
    splitter = LineSplitter(reader.note, max_line_bytes=MAX_PARSED_LINE_BYTES)
    try:
        with path.open("rb") as lines:
            while chunk := lines.read(_READ_BYTES):
                splitter.feed(chunk)
    except OSError:
        return []
    splitter.flush()
    return reader.responses


class _RolloutReader:
    """Collects the responses' usage, each under the model of the turn it belongs to."""

    def __init__(self, since: datetime | None) -> None:
        self.since = since
        self.model = UNNAMED_MODEL
        self.responses: list[tuple[str, TokenUsage]] = []

    def note(self, line: bytes) -> None:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        payload = obj.get("payload") if isinstance(obj, dict) else None
        if not isinstance(payload, dict):
            return
        kind = obj.get("type")
        if kind == "turn_context" and isinstance(payload.get("model"), str):
            self.model = payload["model"]
        elif kind == "token_usage_record" and _at_or_after(obj.get("timestamp"), self.since):
            usage = payload.get("usage")
            if isinstance(usage, dict):
                self.responses.append((self.model, usage_tokens(usage)))


def _at_or_after(stamp: object, since: datetime | None) -> bool:
    if since is None:
        return True
    if not isinstance(stamp, str):
        return False
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")) >= since
    except ValueError:
        return False


def usage_tokens(usage: dict[str, Any]) -> TokenUsage:
    """A Codex ``usage`` object as neutral tokens: its ``input_tokens`` include the cached ones,
    its ``output_tokens`` the reasoning ones."""
    cached = _count(usage.get("cached_input_tokens"))
    return TokenUsage(
        input=max(0, _count(usage.get("input_tokens")) - cached),
        output=_count(usage.get("output_tokens")),
        cache_read=cached,
        cache_write=_count(usage.get("cache_write_input_tokens")),
    )


def _count(value: object) -> int:
    """A token count: a positive integer, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
