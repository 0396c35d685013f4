"""Best-effort history: each Stop becomes an iteration of a ``mode="hook"`` loop in the store.

The decision is printed and flushed first; then the Stop leaves its record in the
project's history queue (``hook.spool``) and, if no writer runs for the project, starts one:
a detached child (new session, stdio on /dev/null, lowered priority, never waited for) that
opens the store once and drains the queue (``hook.storewriter``). One writer per project,
however many Stops arrive at once: a hundred parallel Stops cost one SQLAlchemy import, not a
hundred, and never starve the hooks of CPU. Claude Code waits for the hook's process and
pipes, never for the writer, so the store can never delay a decision.
``RALPHCTL_HOOK_STORE`` = ``detached`` (default) | ``inline`` (write before exiting) | ``off``.
"""

from __future__ import annotations

import os
import sys

from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.log import warn

MODE_ENV = "RALPHCTL_HOOK_STORE"
DB_ENV = "RALPHCTL_DB"
SUMMARY_CHARS = 200
#: How much less CPU the writer asks for than the hooks it serves.
WRITER_NICENESS = 10


class StopRecord:
    """What one Stop (or a cancel, with ``iteration`` None) adds to a loop's history.

    A plain class, not a dataclass: it is built on the hook's hot path.
    """

    __slots__ = (
        "agent",
        "blocked_reason",
        "completed",
        "config",
        "ended_at",
        "iteration",
        "iteration_started_at",
        "loop_id",
        "loop_started_at",
        "messages",
        "project",
        "session_id",
        "stop_detail",
        "stop_reason",
        "summary",
        "task",
    )

    def __init__(
        self,
        *,
        loop_id: str,
        project: str,
        agent: str,
        session_id: str | None,
        task: str,
        loop_started_at: float,
        ended_at: float,
        iteration: int | None = None,
        iteration_started_at: float | None = None,
        summary: str = "",
        completed: bool = False,
        blocked_reason: str | None = None,
        stop_reason: str | None = None,
        stop_detail: str = "",
        config: dict[str, Scalar] | None = None,
        messages: list[int] | None = None,
    ) -> None:
        self.loop_id = loop_id
        self.project = project
        self.agent = agent
        self.session_id = session_id
        self.task = task
        self.loop_started_at = loop_started_at
        self.ended_at = ended_at
        self.iteration = iteration
        self.iteration_started_at = iteration_started_at
        self.summary = summary
        self.completed = completed
        self.blocked_reason = blocked_reason
        self.stop_reason = stop_reason
        self.stop_detail = stop_detail
        self.config = config or {}
        self.messages = messages or []  # seqs of the user's messages the Stop's block delivered

    def to_json(self) -> dict[str, object]:
        """The record as JSON values (the summary cut to what the store keeps)."""
        document: dict[str, object] = {name: getattr(self, name) for name in self.__slots__}
        document["summary"] = self.summary[:SUMMARY_CHARS]
        return document

    @classmethod
    def from_json(cls, document: object) -> StopRecord:
        """The record ``to_json`` wrote; TypeError or ValueError for anything else."""
        # Records queued by an older hook have no ``messages``.
        if not isinstance(document, dict) or set(document) | {"messages"} != set(cls.__slots__):
            raise ValueError(f"not a Stop record: {str(document)[:80]!r}")
        record = cls(**document)
        _check_types(record)
        return record


_TYPES: dict[str, tuple[type, ...]] = {
    "loop_id": (str,),
    "project": (str,),
    "agent": (str,),
    "session_id": (str, type(None)),
    "task": (str,),
    "loop_started_at": (int, float),
    "ended_at": (int, float),
    "iteration": (int, type(None)),
    "iteration_started_at": (int, float, type(None)),
    "summary": (str,),
    "completed": (bool,),
    "blocked_reason": (str, type(None)),
    "stop_reason": (str, type(None)),
    "stop_detail": (str,),
    "config": (dict,),
    "messages": (list,),
}


def _check_types(record: StopRecord) -> None:
    for name, types in _TYPES.items():
        value = getattr(record, name)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise TypeError(f"{name} of a Stop record cannot be {value!r}")


def dispatch(record: StopRecord, mode: str | None) -> None:
    """Record ``record`` as ``mode`` says; never raises."""
    if mode == "off":
        return
    if mode == "inline":
        from ralphctl.hook.storewriter import write_guarded

        write_guarded(record, os.environ.get(DB_ENV))
        return
    from ralphctl.hook import spool
    from ralphctl.hook.jsonio import dumps

    try:
        spool.queue(record.project, dumps({"db": _db(), "record": record.to_json()}))
        writer = spool.claim_writer(record.project)
    except (OSError, TypeError, ValueError) as exc:
        warn(f"history not recorded: cannot queue it ({exc})", record.project)
        return
    if writer is not None:
        try:
            _spawn_writer(record.project, writer)
        except OSError as exc:
            os.close(writer)
            warn(f"cannot start the history writer: {exc}", record.project)


def _db() -> str | None:
    """The store the Stop's environment names, absolute (the writer runs elsewhere); None
    for the user's default database."""
    value = os.environ.get(DB_ENV)
    if not value or "://" in value:
        return value or None
    return os.path.abspath(os.path.expanduser(value))


def _spawn_writer(project: str, writer_lock: int) -> None:
    """Fork the project's writer; it inherits (and alone keeps) the writer lock."""
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork():
        os.close(writer_lock)
        return
    try:
        _detach_stdio()  # first: Claude Code waits until every copy of the hook's pipes closes
        os.setsid()
        os.nice(WRITER_NICENESS)
        from ralphctl.hook.storewriter import drain

        drain(project, writer_lock)
    except BaseException as exc:
        warn(f"the history writer failed: {exc}", project)
    finally:
        os._exit(0)


def _detach_stdio() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
