"""The runner's reads and writes of its session's tracker (the hook's lock and format)."""

from __future__ import annotations

import time
from collections.abc import Callable

from ralphctl.domain import defaults
from ralphctl.domain.states import StopReason
from ralphctl.hook.clock import iso
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.inbox import take
from ralphctl.hook.lock import FileLock
from ralphctl.hook.paths import lock_for
from ralphctl.hook.state import CorruptTracker, loop_state
from ralphctl.hook.tracker import TrackerError, load, update_fields


class TrackerFile:
    """One session's tracker; problems are reported through ``warn``, never raised."""

    def __init__(self, path: str, warn: Callable[[str], None]) -> None:
        self.path = path
        self._warn = warn

    def fields(self) -> dict[str, Scalar] | None:
        """The frontmatter; None if the tracker is gone or unreadable."""
        try:
            tracker = load(self.path)
        except TrackerError as exc:
            self._warn(str(exc))
            return None
        return None if tracker is None else dict(tracker.fields)

    def update(self, changes: dict[str, Scalar]) -> None:
        try:
            update_fields(self.path, changes)
        except (OSError, TrackerError) as exc:
            self._warn(f"cannot update the tracker {self.path}: {exc}")

    def end(self, reason: StopReason, **changes: Scalar) -> None:
        """Deactivate it with ``reason`` (what ``ralphctl sessions`` shows)."""
        ended: dict[str, Scalar] = {"active": False, "ended_reason": str(reason)}
        self.update(ended | {"ended_at": iso(time.time())} | changes)

    def pause(self, **changes: Scalar) -> None:
        """Deactivate it for a pause: no Stop hook continues the session meanwhile."""
        paused: dict[str, Scalar] = {"active": False, "paused": True, "last_decision": "allow"}
        self.update(paused | changes)

    def take_inbox(self) -> list[tuple[int, str]]:
        """Empty the session's inbox of the user's messages (``hook.inbox``, under the
        tracker's lock): their seqs and texts, oldest first."""
        try:
            with FileLock(lock_for(self.path)):
                waiting, problem = take(self.path)
        except OSError as exc:
            waiting, problem = [], f"cannot read the messages inbox: {exc}"
        if problem:
            self._warn(problem)
        return waiting

    def continue_message(self) -> str:
        """What a resumed session is told: the loop's continue message, as a block says it."""
        try:
            tracker = load(self.path)
            if tracker is not None:
                return loop_state(tracker, time.time()).reason
        except (TrackerError, CorruptTracker):
            pass
        return defaults.CONTINUE_MESSAGE
