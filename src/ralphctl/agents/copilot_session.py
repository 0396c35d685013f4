"""What the Copilot CLI itself keeps of a session: ``<home>/session-state/<id>/events.jsonl``.

Read to recover the usage of a run whose runner died before it read the run's usage file.
Each model request is one ``session.usage_record`` line (CLI 1.0.102): ``data.usage{model,
inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens}`` with its ISO ``timestamp``;
``inputTokens`` counts the cached input too. Read line by line, lines over
``MAX_PARSED_LINE_BYTES`` skipped. The home is ``$COPILOT_HOME`` or ``~/.copilot``: a run
isolated in a home of its own (``copilot.isolated_home``) is not found here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

import orjson

from ralphctl.agents.process import MAX_PARSED_LINE_BYTES, LineSplitter
from ralphctl.domain.model import UNNAMED_MODEL, ModelTokens, TokenUsage

HOME_ENV = "COPILOT_HOME"
_SESSION_ID = re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_READ_BYTES = 1024 * 1024


def session_tokens(
    session_id: str, since: datetime | None = None, home: Path | None = None
) -> tuple[ModelTokens, ...]:
    """Tokens per model the CLI recorded for ``session_id`` (only requests recorded at or
    after ``since``, when given); empty when it kept no record of it here."""
    if not _SESSION_ID.fullmatch(session_id):
        return ()
    path = (home or copilot_home()) / "session-state" / session_id / "events.jsonl"
    if not path.is_file():
        return ()
    per_model: dict[str, TokenUsage] = {}
    splitter = LineSplitter(
        lambda line: _note(line, per_model, since), max_line_bytes=MAX_PARSED_LINE_BYTES
    )
    with path.open("rb") as lines:
        while chunk := lines.read(_READ_BYTES):
            splitter.feed(chunk)
    splitter.flush()
    return tuple(ModelTokens(model, tokens) for model, tokens in per_model.items())


def copilot_home(env: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    """``$COPILOT_HOME``, else ``~/.copilot``."""
    env = os.environ if env is None else env
    if configured := env.get(HOME_ENV):
        return Path(configured)
    return (home or Path.home()) / ".copilot"


def _note(line: bytes, per_model: dict[str, TokenUsage], since: datetime | None) -> None:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return
    if not isinstance(record, dict) or record.get("type") != "session.usage_record":
        return
    if since is not None and not _recorded_since(record.get("timestamp"), since):
        return
    data = record.get("data")
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return
    model = usage.get("model")
    name = model if isinstance(model, str) else UNNAMED_MODEL
    cache_read = _count(usage.get("cacheReadTokens"))
    tokens = TokenUsage(
        input=max(0, _count(usage.get("inputTokens")) - cache_read),
        output=_count(usage.get("outputTokens")),
        cache_read=cache_read,
        cache_write=_count(usage.get("cacheWriteTokens")),
    )
    per_model[name] = per_model.get(name, TokenUsage()) + tokens


def _recorded_since(timestamp: object, since: datetime) -> bool:
    if not isinstance(timestamp, str):
        return False
    try:
        recorded = datetime.fromisoformat(timestamp)
    except ValueError:
        return False
    return recorded.tzinfo is not None and recorded >= since


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
