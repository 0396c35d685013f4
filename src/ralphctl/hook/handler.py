"""The Stop hook end to end: one JSON object in, at most one JSON object out, exit 0.

Fail open on everything: bad arguments or stdin, a missing, unreadable or corrupt tracker,
any exception: the stop is allowed (no stdout), with one warning line on stderr and in
``.ralph/hook.log``. Imports are ordered by need: a Stop with no loop for its session costs
a few stat calls; the brain (markers, conditions) is imported only when a loop applies.
"""

from __future__ import annotations

import os
import sys
import time

from ralphctl.hook import locate, paths
from ralphctl.hook.log import warn
from ralphctl.hook.stopinput import CLI_NAMES, READ_TIMEOUT_S, parse, read

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ralphctl.hook.frontmatter import Scalar
    from ralphctl.hook.locate import Found
    from ralphctl.hook.record import StopRecord
    from ralphctl.hook.stop import LoopState, Outcome
    from ralphctl.hook.stopinput import StopEvent
    from ralphctl.hook.tracker import Tracker

#: The events a Stop hook answers (Claude Code and Codex: Stop; Gemini: AfterAgent;
#: Copilot: agentStop; Cursor: stop; OpenCode: session.idle, sent by ralphctl's plugin).
EVENTS = frozenset({"Stop", "AfterAgent", "agentStop", "stop", "session.idle"})
DEFAULT_FORMAT = "claude"
#: Cursor's own cap on follow-ups (its hooks.json ``loop_limit``) when the hook is not told.
CURSOR_LOOP_LIMIT = 5
#: Where a CLI tells its hooks the project directory, before ``CLAUDE_PROJECT_DIR`` (which
#: ``ralphctl run --mode hook`` sets for every agent); Codex and Copilot set none.
PROJECT_ENV = {"gemini": "GEMINI_PROJECT_DIR", "cursor": "CURSOR_PROJECT_DIR"}
#: Stdin is read up to one byte past the limit, which stopinput then refuses.
READ_LIMIT = 16 * 1024 * 1024 + 1
#: Names the Unix socket of a ``ralphctl run --mode hook`` runner (see ``hook.forwarder``).
SOCKET_ENV = "RALPHCTL_HOOK_SOCKET"
#: Tracker fields copied into the stored loop's config.
RECORDED_CONFIG = ("max_iterations", "completion_marker", "max_runtime_s", "max_cost_usd")


class HookError(Exception):
    """A Stop the hook cannot decide: it allows it and says why."""


def main(argv: list[str]) -> int:
    """``ralphctl-hook stop [--format claude|codex|gemini|copilot|cursor|opencode]
    [--loop-limit N]``:
    always exits 0. ``--loop-limit`` repeats Cursor's ``loop_limit`` from its hooks.json.

    Under ``ralphctl run --mode hook`` (``RALPHCTL_HOOK_SOCKET`` set) the runner decides;
    without its answer the hook decides locally and leaves the history to the runner.
    """
    try:
        raw, ended = read(sys.stdin.fileno(), READ_LIMIT)
    except BaseException as exc:  # no stdin at all: nothing to decide on
        warn(f"allowing the stop: cannot read stdin ({exc})", _project())
        return 0
    if not ended:
        warn(f"stdin was not closed within {READ_TIMEOUT_S:g}s: using what arrived", _project())
    history = True
    socket_path = os.environ.get(SOCKET_ENV)
    if socket_path:
        from ralphctl.hook.forwarder import forward

        try:
            answer = forward(socket_path, raw, argv, os.environ)
        except Exception as exc:
            warn(f"no answer from the ralphctl runner ({exc}): deciding locally", _project())
            history = False
        else:
            if answer.decided:
                _emit(answer.line)
                return 0
    line, record = respond(raw, argv, os.environ, time.time())
    if _emit(line) and history and record is not None:
        from ralphctl.hook.record import MODE_ENV, dispatch

        dispatch(record, os.environ.get(MODE_ENV))
    return 0


def _emit(line: str | None) -> bool:
    """Print the decision (None: nothing); False if it could not be printed."""
    if line is None:
        return True
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BaseException as exc:
        warn(f"cannot print the decision ({exc})", _project())
        return False
    return True


def _project() -> str | None:
    return os.environ.get("CLAUDE_PROJECT_DIR")


def respond(
    raw: bytes, argv: list[str], env: Mapping[str, str], now: float
) -> tuple[str | None, StopRecord | None]:
    """The line to print (None: nothing) and the history to record. Never raises: any
    failure is one warning and an allowed stop."""
    run = StopRun(env, now)
    try:
        return run.handle(raw, parse_args(argv))
    except BaseException as exc:  # the hook must never fail closed
        warn(f"allowing the stop: {exc or type(exc).__name__}", run.project)
        return None, None


class HookArgs:
    """``stop``'s options: the output format (the agent) and Cursor's follow-up cap."""

    __slots__ = ("loop_limit", "output_format")

    def __init__(self, output_format: str = DEFAULT_FORMAT, loop_limit: int | None = None) -> None:
        self.output_format = output_format
        self.loop_limit = loop_limit


def parse_args(argv: list[str]) -> HookArgs:
    """``[--format X] [--loop-limit N]``, each also as ``--flag=value``; anything else is an
    error (and the stop is allowed)."""
    values: dict[str, str] = {}
    rest = list(argv)
    while rest:
        flag, given, value = rest.pop(0).partition("=")
        if flag not in ("--format", "--loop-limit") or flag in values:
            raise HookError(_usage(argv))
        if not given:
            if not rest:
                raise HookError(_usage(argv))
            value = rest.pop(0)
        values[flag] = value
    limit = values.get("--loop-limit")
    if limit is not None and not (limit.isascii() and limit.isdigit()):
        raise HookError(f"--loop-limit must be a whole number, not {limit!r}")
    return HookArgs(values.get("--format", DEFAULT_FORMAT), None if limit is None else int(limit))


def _usage(argv: list[str]) -> str:
    return f"unexpected arguments {' '.join(argv)!r}: use stop [--format FORMAT] [--loop-limit N]"


class StopRun:
    """One Stop event; ``project`` is known as early as possible, for the log."""

    def __init__(self, env: Mapping[str, str], now: float) -> None:
        self.env = env
        self.now = now
        self.project: str | None = env.get("CLAUDE_PROJECT_DIR") or None

    def handle(self, raw: bytes, args: HookArgs) -> tuple[str | None, StopRecord | None]:
        """The line to print (None: nothing) and what to add to the history (None: nothing).

        Only Claude Code's hook reads ``CLAUDE_CODE_SESSION_ID``: another agent run from
        inside a Claude Code session inherits it, and it is not that agent's session.
        """
        output_format = args.output_format
        claude = output_format == DEFAULT_FORMAT
        env_session = self.env.get("CLAUDE_CODE_SESSION_ID") if claude else None
        if (
            self.project is not None
            and paths.valid_session_id(env_session)
            and not locate.might_apply(self.project, env_session)
        ):
            return None, None
        from ralphctl.hook import mapper

        mapper.check(output_format)
        own_project = PROJECT_ENV.get(output_format)
        self.project = (own_project and self.env.get(own_project)) or self.project
        event = parse(raw, output_format)
        if event.hook_event_name is not None and event.hook_event_name not in EVENTS:
            return None, None
        session = next(
            (s for s in (event.session_id, env_session) if paths.valid_session_id(s)), None
        )
        if (  # the other CLIs' fast path (Claude Code's is its environment, above)
            not claude
            and session is not None
            and not locate.might_apply(
                paths.unchecked_project_dir(self.project, event.cwd), session, legacy=False
            )
        ):
            return None, None
        try:
            self.project = paths.project_dir(self.project, event.cwd)
        except paths.UnsafeDirectory:
            self.project = None  # no log there either
            raise
        if session is None:
            raise HookError(f"no valid session_id in the Stop input ({event.session_id!r})")
        found = locate.find(  # the official plugin's state file is Claude Code's only
            self.project, session, event.transcript_path, self.now, event.final_text, legacy=claude
        )
        if found is None:
            if event.stop_hook_active and locate.vanished(self.project, session):
                self._vanished(paths.tracker_path(self.project, session))
            return None, None
        if not event.completed_turn:  # aborted or failed: the loop waits for a real end
            warn(
                f"{CLI_NAMES[output_format]} ended this turn with status {event.status!r}: not "
                "a completion; the loop goes on at the next completed turn",
                self.project,
            )
            return None, None
        decided = self._decide(found, event, session, args)
        if decided is None:
            return None, None
        line = mapper.render(decided.outcome.intent, output_format)
        return line, self._record(decided, session, output_format)

    def _decide(
        self, found: Found, event: StopEvent, session: str, args: HookArgs
    ) -> Decided | None:
        """Read, decide and write back, under the tracker's lock."""
        from ralphctl.hook.clock import iso
        from ralphctl.hook.lock import FileLock
        from ralphctl.hook.state import CorruptTracker
        from ralphctl.hook.stop import decide
        from ralphctl.hook.tracker import load, new_loop_id, save_fields

        with FileLock(found.lock):
            tracker = load(found.path, legacy=found.legacy)
            if tracker is None or not _applies(found, tracker.fields, session):
                return None
            try:
                state = _state(found, tracker, self.now)
            except CorruptTracker as exc:
                warn(f"{found.path} is corrupt ({exc}): deactivating it", self.project)
                broken: dict[str, Scalar] = {
                    "active": False,
                    "ended_reason": "corrupt",
                    "ended_at": iso(self.now),
                    "problem": str(exc),
                }
                save_fields(found.path, tracker.fields | broken, legacy=found.legacy)
                return None
            final_text = event.final_text
            if args.output_format == "copilot":  # its transcript lags: wait for this stop
                from ralphctl.hook.copilot_transcript import final_text as copilot_text

                final_text = copilot_text(event.transcript_path, event.timestamp)
            # Claude Code before 2.1.47, Cursor: none sent (the transcript may lag);
            # Gemini: every reply of the process sent (its transcript has the last one)
            elif final_text is None or args.output_format == "gemini":
                from ralphctl.hook.transcript import last_assistant_text

                final_text = last_assistant_text(event.transcript_path) or final_text or ""
            outcome = decide(
                state,
                final_text,
                stop_hook_active=event.stop_hook_active,
                now=iso(self.now),
                cli=CLI_NAMES[args.output_format],
                agent_cap=_agent_cap(args, event),
            )
            fields = tracker.fields | outcome.changes
            if not _text(fields.get("loop_id")):
                fields["loop_id"] = new_loop_id()
            if not save_fields(found.path, fields, legacy=found.legacy):
                if not found.legacy:  # deleting the plugin's state file is its cancel
                    self._vanished(found.path)
                return None
            delivered = self._deliver_messages(found, outcome)
        return Decided(tracker, fields, outcome, state.iteration, final_text, delivered)

    def _deliver_messages(self, found: Found, outcome: Outcome) -> list[int]:
        """Move the user's waiting messages (``ralphctl tell``) into a block's continue
        message; the seqs delivered. Under the tracker's lock; any trouble delivers none."""
        from ralphctl.hook.stop import StopBlock

        if found.legacy or not isinstance(outcome.intent, StopBlock):
            return []
        from ralphctl.hook.inbox import take

        try:
            waiting, problem = take(found.path)
        except OSError as exc:
            waiting, problem = [], f"cannot read the messages inbox ({exc})"
        if problem:
            warn(problem, self.project)
        if not waiting:
            return []
        from ralphctl.domain.steering import section

        lines = section([text for _, text in waiting])
        outcome.intent.reason = outcome.intent.reason + "\n\n" + "\n".join(lines)
        return [seq for seq, _ in waiting]

    def _vanished(self, path: str) -> None:
        warn(
            f"the loop tracker {path} disappeared mid-loop (deleted?): the loop ends here; "
            "arm a new one to go on",
            self.project,
        )

    def _record(self, decided: Decided, session: str, agent: str) -> StopRecord:
        from ralphctl.hook.record import StopRecord

        before, after, ended = decided.before.fields, decided.fields, decided.outcome.ended
        detection = decided.outcome.detection
        started = _epoch(after.get("started_at")) or self.now
        return StopRecord(
            loop_id=str(after["loop_id"]),
            project=str(self.project),
            agent=agent,
            session_id=session,
            task=_text(after.get("task")) or decided.before.body.strip(),
            loop_started_at=started,
            ended_at=self.now,
            iteration=decided.iteration,
            # The iteration that just ended began with our previous decision (or the arming).
            iteration_started_at=_epoch(before.get("last_decision_at")) or started,
            summary=decided.final_text,
            completed=detection.completed,
            blocked_reason=detection.blocked_reason,
            stop_reason=None if ended is None else str(ended.reason),
            stop_detail="" if ended is None else ended.detail,
            config={key: after[key] for key in RECORDED_CONFIG if key in after},
            messages=decided.messages,
        )


class Decided:
    """A decided Stop: the tracker as read, its new fields, the outcome, what the agent said."""

    __slots__ = ("before", "fields", "final_text", "iteration", "messages", "outcome")

    def __init__(
        self,
        before: Tracker,
        fields: dict[str, Scalar],
        outcome: Outcome,
        iteration: int,
        final_text: str,
        messages: list[int],
    ) -> None:
        self.before = before
        self.fields = fields
        self.outcome = outcome
        self.iteration = iteration
        self.final_text = final_text
        self.messages = messages  # the seqs of the user's messages the block delivered


def _agent_cap(args: HookArgs, event: StopEvent) -> str | None:
    """Why a block would not reach the agent, if the CLI's own cap is reached: Cursor sends
    no follow-up once ``loop_count`` reaches its ``loop_limit`` and ends the loop itself."""
    if args.output_format != "cursor" or event.loop_count is None:
        return None
    limit = CURSOR_LOOP_LIMIT if args.loop_limit is None else args.loop_limit
    if event.loop_count < limit:
        return None
    return f"ended by Cursor's loop_limit ({limit} follow-ups)"


def _state(found: Found, tracker: Tracker, now: float) -> LoopState:
    """The loop as the decision sees it, from our tracker or the official plugin's."""
    if found.legacy:
        from ralphctl.hook.legacy import legacy_state

        return legacy_state(tracker)
    from ralphctl.hook.state import loop_state

    return loop_state(tracker, now)


def _applies(found: Found, fields: dict[str, Scalar], session: str) -> bool:
    if found.legacy:
        return locate.legacy_applies(fields, session)
    return locate.is_active(fields)


def _text(value: Scalar) -> str | None:
    return value if isinstance(value, str) and value else None


def _epoch(value: Scalar) -> float | None:
    from ralphctl.hook.clock import epoch

    text = _text(value)
    if text is None:
        return None
    try:
        return epoch(text)
    except ValueError:
        return None
