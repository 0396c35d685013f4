"""A fresh-context loop's tracker file: made from its template, read after every iteration.

Hook mode keeps its tracker at ``.ralph/sessions/<session id>/loop-tracker.md``, with
frontmatter the Stop hook owns. A fresh loop has no session spanning its iterations, so its
tracker is ``.ralph/loops/<loop id>/loop-tracker.md``: plain markdown, all of it the agent's.
It is created from the template before the first iteration (a resumed loop keeps its file),
named in every prompt, and read after every iteration: its last non-empty line declares
completion or BLOCKED by the rule hook mode uses (``domain.markers.detect_in_tracker``).
Files follow the hook's safety rules: directories are made one real directory at a time (a
symlinked ``.ralph`` is refused, never followed), and only a regular file is read, never a
FIFO, bounded in size.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ralphctl.atomic import write_atomic
from ralphctl.domain.markers import Detection, Marker, detect_in_tracker
from ralphctl.hook import paths
from ralphctl.hook.tracker import TrackerError, read_text

LOOPS_DIR = Path(".ralph") / "loops"
TRACKER_NAME = "loop-tracker.md"


class TrackerUnreadable(OSError):
    """The tracker exists but cannot be read (not a regular file, too large, not UTF-8)."""


@dataclass(frozen=True, slots=True)
class FreshTracker:
    """The tracker of loop ``loop_id`` in ``workdir``."""

    workdir: Path
    loop_id: str

    @property
    def relative(self) -> str:
        """The path the agent is told: relative to its work dir."""
        return str(LOOPS_DIR / self.loop_id / TRACKER_NAME)

    @property
    def path(self) -> Path:
        return self.workdir / self.relative

    def create(self, template: str) -> None:
        """Write the template unless the file exists (a resumed loop keeps its own)."""
        if self.path.exists() or self.path.is_symlink():
            return
        project = str(self.workdir)
        paths.ralph_dir(project)  # with its .gitignore, as hook mode makes it
        paths.make_dirs(project, *LOOPS_DIR.parts, self.loop_id)  # never through a symlink
        write_atomic(self.path, template.strip() + "\n")

    def declaration(self, marker: Marker) -> Detection | None:
        """What the tracker's last line declares; None when the file is gone (the agent may
        delete it). TrackerUnreadable when it cannot be read."""
        try:
            body = read_text(str(self.path))
        except TrackerError as exc:
            raise TrackerUnreadable(str(exc)) from None
        return None if body is None else detect_in_tracker(body, marker)
