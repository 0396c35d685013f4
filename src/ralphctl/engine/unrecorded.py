"""Iterations the database refused, kept in a file beside the loop until they are recorded.

When the store cannot be written (a lock held past the busy timeout, a full disk), a finished
iteration's record (its agent's tokens, cost, status and session id) and its events, or the
start of an iteration whose start was refused, are written to
``.ralph/unrecorded-<loop id>.json`` in the loop's work dir (atomically, ``ralphctl.atomic``).
Whoever next takes the loop over (``engine/leftovers``) records them, exactly once: each is
keyed by its loop id and iteration number, and the store skips one recorded already. A finished
iteration also keeps the loop's streaks as they were after it (``LOOP_STATE``: the error streak,
the breaker, the runtime), so that the breaker and the runtime budget count it once recorded.

Only ``os``, ``json`` and the records: the runner imports this on its start-up path.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from ralphctl.atomic import write_atomic
from ralphctl.store.records import IterationRecord, LoopRecord

log = logging.getLogger(__name__)

VERSION = 1
_TIMES = frozenset({"started_at", "completed_at", "agent_started_at"})
_FIELDS = frozenset(f.name for f in fields(IterationRecord))

Event = tuple[str, dict[str, Any]]
#: What of the loop an iteration's record changes besides its totals, kept with it.
LOOP_STATE = ("consecutive_errors", "breaker_state", "runtime_s")


class JournalUnreadable(ValueError):
    """The journal file is not what ralphctl writes; the message says why and where."""


@dataclass(frozen=True, slots=True)
class Unrecorded:
    """An iteration the store refused: finished (``record.status`` not ``running``) with its
    events, or only begun."""

    record: IterationRecord
    events: list[Event]
    loop_state: dict[str, Any] | None = None  # LOOP_STATE after it (a finished one)

    @property
    def finished(self) -> bool:
        return self.record.status != "running"


def journal_path(workdir: str | os.PathLike[str], loop_id: str) -> Path:
    """Where the loop's journal is kept: ``.ralph/`` of its work dir, one file per loop."""
    return Path(workdir) / ".ralph" / f"unrecorded-{loop_id}.json"


def has_journal(workdir: str | os.PathLike[str], loop_id: str) -> bool:
    """Whether the loop has iterations kept to record (one ``stat``: cheap at every start)."""
    return journal_path(workdir, loop_id).exists()


def loop_state(loop: LoopRecord) -> dict[str, Any]:
    """The loop's ``LOOP_STATE``, to keep with its newest iteration."""
    return {name: getattr(loop, name) for name in LOOP_STATE}


def keep(
    workdir: str | os.PathLike[str],
    record: IterationRecord,
    events: list[Event],
    state: dict[str, Any] | None = None,
) -> bool:
    """Add ``record`` (replacing what was kept of its iteration) with the loop's ``state``
    after it to the loop's journal; False, logged, when even that file cannot be written."""
    path = journal_path(workdir, record.loop_id)
    try:
        kept = read_journal(workdir, record.loop_id)
    except JournalUnreadable as exc:
        log.warning("%s; it is set aside", exc)
        kept = []
        _set_aside(path)
    entries = {entry.record.n: entry for entry in kept}
    entries[record.n] = Unrecorded(record, events, state)
    document = {
        "version": VERSION,
        "loop_id": record.loop_id,
        "iterations": [_entry_json(entries[n]) for n in sorted(entries)],
    }
    try:
        path.parent.mkdir(exist_ok=True)
        write_atomic(path, json.dumps(document, indent=1))
    except OSError as exc:
        log.warning(
            "cannot keep iteration %d of loop %s in %s: %s", record.n, record.loop_id, path, exc
        )
        return False
    return True


def read_journal(workdir: str | os.PathLike[str], loop_id: str) -> list[Unrecorded]:
    """What the loop's journal keeps, in iteration order ([] without a journal).

    Raises JournalUnreadable for a file that is not a journal of this loop."""
    path = journal_path(workdir, loop_id)
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):  # no journal, or no work dir any more
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise JournalUnreadable(f"cannot read {path}: {exc}") from exc
    try:
        document = json.loads(text)
        if document.get("version") != VERSION or document.get("loop_id") != loop_id:
            raise ValueError(f"not a version {VERSION} journal of loop {loop_id}")
        entries = [_entry(item, loop_id) for item in document["iterations"]]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise JournalUnreadable(f"{path} is not a journal ralphctl can read ({exc})") from exc
    return sorted(entries, key=lambda entry: entry.record.n)


def forget(workdir: str | os.PathLike[str], loop_id: str) -> None:
    """Remove the loop's journal (everything in it is recorded)."""
    journal_path(workdir, loop_id).unlink(missing_ok=True)


def set_aside(workdir: str | os.PathLike[str], loop_id: str) -> Path:
    """Rename an unreadable journal to ``….corrupt`` (kept for a person to read, never
    replayed); its new path."""
    return _set_aside(journal_path(workdir, loop_id))


def _set_aside(path: Path) -> Path:
    aside = path.with_name(path.name + ".corrupt")
    try:
        path.replace(aside)
    except OSError as exc:
        log.warning("cannot set %s aside: %s", path, exc)
    return aside


def _entry_json(entry: Unrecorded) -> dict[str, Any]:
    record = {
        name: value.isoformat() if isinstance(value, datetime) else value
        for name, value in ((f, getattr(entry.record, f)) for f in sorted(_FIELDS))
    }
    document = {"record": record, "events": [[kind, data] for kind, data in entry.events]}
    if entry.loop_state is not None:
        document["loop"] = entry.loop_state
    return document


def _entry(item: dict[str, Any], loop_id: str) -> Unrecorded:
    data = item["record"]
    unknown = set(data) - _FIELDS
    if unknown:
        raise ValueError(f"unknown fields {sorted(unknown)}")
    values: dict[str, Any] = {
        name: datetime.fromisoformat(value) if name in _TIMES and value is not None else value
        for name, value in data.items()
    }
    record = IterationRecord(**values)
    if record.loop_id != loop_id or not isinstance(record.n, int) or record.n < 1:
        raise ValueError(f"an entry of another loop or without an iteration number: {data!r}")
    events = [(str(kind), dict(event)) for kind, event in item["events"]]
    state = item.get("loop")
    if state is not None and (not isinstance(state, dict) or set(state) != set(LOOP_STATE)):
        raise ValueError(f"the loop's state after iteration {record.n} is not {LOOP_STATE}")
    return Unrecorded(record, events, state)
