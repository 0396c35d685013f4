"""``[loops] transcript_retention_days``: delete the transcripts of iterations older than that.

Applied by every runner as its loop begins (``ralphctl run``, ``resume``, and the loops
``ralphctl serve`` runs), off the first agent's start-up path; ``ralphctl serve``'s manager
also applies its own setting periodically (``LoopManager``). 0, the default, keeps every
transcript.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from ralphctl.settings import ConfigError, resolve_settings
from ralphctl.store.repository import Store
from ralphctl.store.transcript_chunks import prune_transcripts


def apply_transcript_retention(store: Store, project_dir: Path) -> str | None:
    """Delete what the setting (as ``project_dir`` sees it) no longer keeps; a warning for the
    user when the setting cannot be read (nothing is deleted then), else None."""
    try:
        days = resolve_settings(project_dir).loops.transcript_retention_days
    except ConfigError as exc:
        return f"transcript retention not applied: {exc}"
    if days:
        prune_transcripts(store, started_before=datetime.now(UTC) - timedelta(days=days))
    return None
