"""The Stops of a hook-mode session: each one decided with the hook's own code, then recorded.

``respond`` (``hook.handler``) is the whole decision, so the tracker stays the one source of
truth and a hook that could not reach the runner decides exactly as the runner would. Before
deciding, the live cost and token totals go into the tracker, where the budgets are read.
The answer is sent first; the iteration is recorded after it (``Reply.then``). A block's
reason carries the notes a fresh loop's next prompt would (``notes``). Each Stop is read, and
answered, in the format of the agent whose hook forwarded it (its ``--format``). With
``on_question = wait``, a Stop whose text asks the user something (and whose block brings no
message of theirs) is allowed instead: the runner waits for the answer (``answers``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from ralphctl.agents.events import AgentEvent, TextChunk
from ralphctl.domain.conditions import Action, Decision, ExternalSignal
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.events import EventType
from ralphctl.domain.questions import find_question
from ralphctl.domain.states import StopReason
from ralphctl.domain.steering import NO_HUMAN_NOTE
from ralphctl.engine.hookmode.activity import ActivityLog
from ralphctl.engine.hookmode.answers import Asked
from ralphctl.engine.hookmode.guards import HookBreaker
from ralphctl.engine.hookmode.history import History
from ralphctl.engine.hookmode.notes import iteration_notes, with_notes
from ralphctl.engine.hookmode.server import Reply, StopRequest
from ralphctl.engine.hookmode.session import Session
from ralphctl.engine.hookmode.trackerfile import TrackerFile
from ralphctl.engine.hookmode.usage import MeteredParser, Usage
from ralphctl.engine.runner import RunControl
from ralphctl.engine.sentinels import read_sentinel
from ralphctl.hook.frontmatter import Scalar
from ralphctl.hook.handler import DEFAULT_FORMAT, HookError, parse_args, respond
from ralphctl.hook.mapper import FORMATS, render
from ralphctl.hook.record import StopRecord
from ralphctl.hook.stop import Allow
from ralphctl.hook.stopinput import StopInputError, parse

NOT_OURS = Reply(decided=False)
ALLOW = Reply(decided=True)
DECIDED_ALONE = "(decided by the Stop hook alone: the runner did not answer in time)"


class Stops:
    """Decides and records one session's Stops. ``ended``: the decision that ended the loop;
    ``paused``: a pause ended the session's turn; ``asked``: a question the loop waits to
    have answered ended it (``on_question = wait``); ``fatal``: a recording failure, raised by
    the runner once the agent has stopped. ``external`` (the manager's requests and sentinel
    files) is asked at each Stop the loop would go on from; without it, ``.ralph/stop`` and
    ``.ralph/pause`` are read. While ``adopt`` is set, the session's id is not known yet
    (an agent that names its sessions, ``adoption``): the first Stop forwarded here names it."""

    def __init__(
        self,
        history: History,
        session: Session,
        tracker: TrackerFile,
        config: LoopConfig,
        control: RunControl,
        meter: MeteredParser,
        breaker: HookBreaker,
        external: Callable[[], ExternalSignal | None] | None = None,
    ) -> None:
        self.history = history
        self.breaker = breaker
        self.session = session
        self.tracker = tracker
        self.config = config
        self.control = control
        self.meter = meter
        self.external = external or (lambda: read_sentinel(history.workdir))
        self.ended: Decision | None = None
        self.paused = False
        self.asked: Asked | None = None
        self.fatal: Exception | None = None
        self.decided = 0  # Stops decided in the current agent run
        self.adopt: Callable[[str], None] | None = None
        self._last: tuple[bytes, int, int] | None = None
        self._seen = 0  # the agent's texts so far: a new Stop comes after a new one
        self.activity = ActivityLog()
        self._unpriced: set[str] = set()
        self._env = {"CLAUDE_PROJECT_DIR": history.loop.workdir}
        self.session_is(session)

    def session_is(self, session: Session) -> None:
        """The session (its id adopted from the agent, its tracker moved with it)."""
        self.session = session
        self._env["CLAUDE_CODE_SESSION_ID"] = session.session_id

    def new_run(self, meter: MeteredParser) -> None:
        """A new agent process of the session, metered by ``meter``."""
        self.meter, self._last, self.decided = meter, None, 0
        self.asked = None

    def on_stop(self, request: StopRequest) -> Reply:
        """Decide one forwarded Stop (in the event loop: quick)."""
        agent = _agent_format(request.argv)
        session, text = _stop_input(request.raw, agent)
        if self.adopt is not None and session:  # the input's own id, never an inherited one
            self.adopt(session)
        if (session or request.session_id) != self.session.session_id:
            return NOT_OURS  # e.g. a nested claude: its own hook decides, as a standalone one
        if self.control.interrupt.is_set() or self.ended is not None or self.paused:
            return ALLOW
        if self.asked is not None:  # the turn ends at the question: the runner waits
            return ALLOW
        if self._last == (request.raw, self.meter.messages, self._seen):
            return ALLOW  # the same Stop from a second copy of the hook: the first one decided
        self._last = (request.raw, self.meter.messages, self._seen)
        self.decided += 1
        self._write_totals()
        line, record = respond(request.raw, request.argv, self._env, time.time())
        if record is not None:  # the text decided on (Copilot, Cursor, Gemini: a transcript's)
            text = record.summary
        if record is not None and record.stop_reason is None:
            signal = self.external()
            if signal is ExternalSignal.STOP:
                line = self._stop_now(record, StopReason.USER_STOP, "stop requested", agent)
            elif signal is ExternalSignal.PAUSE:
                line = self._pause_now(record, agent)
            elif (trip := self.breaker.tripped) is not None:
                line = self._stop_now(record, StopReason.CIRCUIT_BREAKER, trip, agent)
            else:
                notes = iteration_notes(text or "", self.activity.current())
                if record.messages:  # the user's messages may answer what the note says not
                    notes = [note for note in notes if note != NO_HUMAN_NOTE]
                question = None if record.messages else self._waited_for(text or "")
                if question is not None:
                    line = self._ask_now(record, question, notes, agent)
                else:
                    line = with_notes(line, notes)
        then = partial(self._record_safely, record, self.meter.take(), text or "")
        return Reply(decided=True, line=line, then=then)

    def catch_up_with(self, fields: dict[str, Scalar]) -> None:
        """After a run: record the Stops the hook decided alone (the tracker is ahead)."""
        iteration = fields.get("iteration")
        if not isinstance(iteration, int) or iteration < self.history.running():
            return
        self._catch_up(iteration)
        if fields.get("active") is not True:  # ... the last of them ended the loop
            denials = self.activity.take().denials
            self.history.complete("ok", DECIDED_ALONE, self.meter.take(), denials=denials)

    def on_agent_event(self, event: AgentEvent) -> None:
        if isinstance(event, TextChunk):
            self._seen += 1
        self.activity.on_agent_event(event)

    def recording_failed(self, exc: Exception) -> None:
        """A Stop could not be recorded (the store failed): stop the agent, report it
        afterwards."""
        self.fatal = self.fatal or exc
        self.control.interrupt.set()

    def _record_safely(self, record: StopRecord | None, usage: Usage, text: str) -> None:
        try:
            self._record(record, usage, text)
        except Exception as exc:
            self.recording_failed(exc)

    def _record(self, record: StopRecord | None, usage: Usage, text: str) -> None:
        history = self.history
        if record is not None:
            if record.iteration is None or record.iteration <= history.loop.iteration:
                return  # already recorded
            self._catch_up(record.iteration)
        if history.open is None:
            return
        n, activity = history.open.n, self.activity.take()
        history.complete(
            "ok",
            text if record is None else record.summary,
            usage,
            completed=record is not None and record.completed,
            blocked_reason=None if record is None else record.blocked_reason,
            denials=activity.denials,
        )
        self.breaker.judge(n, activity.result(text))
        if record is not None and (question := find_question(text)) is not None:
            waits = self.asked is not None and self.asked.iteration == n
            on_question = "wait" if waits else "continue"
            asked = {"iteration": n, "question": question, "on_question": on_question}
            history.publish(EventType.QUESTION, asked)
        self._warn_unpriced()
        if record is None:
            return  # no active loop any more (cancelled): the session ends now
        if record.stop_reason is not None:
            self.ended = Decision(Action.STOP, StopReason(record.stop_reason), record.stop_detail)
        elif not self.paused and self.asked is None:
            history.begin(history.loop.iteration + 1, record.messages)

    def _catch_up(self, n: int) -> None:
        """Make ``n`` the open iteration, recording the ones before it as decided alone."""
        history = self.history
        if history.open is None:
            history.begin(history.loop.iteration + 1)
        while history.open is not None and history.open.n < n:
            history.complete("ok", DECIDED_ALONE)
            history.begin(history.loop.iteration + 1)

    def _write_totals(self) -> None:
        """The live totals into the tracker, where the decision reads its budgets."""
        usage = self.meter.current()
        tokens = (self.history.tokens() + usage.tokens).counted(
            include_cache=self.config.count_cache_tokens
        )
        cost = self.history.loop.cost_usd + usage.cost_usd
        self.tracker.update({"cost_usd": cost, "tokens": tokens})

    def _stop_now(
        self, record: StopRecord, reason: StopReason, detail: str, agent: str
    ) -> str | None:
        """Turn the block just decided into the loop's end (a stop request, a tripped breaker)."""
        n = record.iteration
        self.tracker.end(reason, last_decision="allow", iteration=n)
        record.stop_reason, record.stop_detail = str(reason), detail
        return render(Allow(f"Ralph loop stopped at iteration {n}: {detail}."), agent)

    def _pause_now(self, record: StopRecord, agent: str) -> str | None:
        """Turn the block just decided into the end of the session's turn (a pause)."""
        n = record.iteration
        self.tracker.pause(iteration=n)
        self.paused = True
        return render(Allow(f"Ralph loop paused at iteration {n}."), agent)

    def _waited_for(self, text: str) -> str | None:
        """The question in ``text`` the loop waits to have answered, if it waits for one."""
        return find_question(text) if self.config.on_question == "wait" else None

    def _ask_now(
        self, record: StopRecord, question: str, notes: list[str], agent: str
    ) -> str | None:
        """Turn the block just decided into the end of the session's turn: the loop waits
        for the user's answer to ``question`` (the runner, once the process has ended)."""
        n = record.iteration
        assert n is not None, "a decided Stop has an iteration"
        self.tracker.pause(iteration=n)
        self.asked = Asked(n, question, tuple(notes))
        message = f"Ralph loop waiting for an answer to its question at iteration {n}."
        return render(Allow(message), agent)

    def _warn_unpriced(self) -> None:
        for model in sorted(self.meter.unpriced - self._unpriced):
            self._unpriced.add(model)
            self.history.warn(f"no price for model {model!r}: the live cost estimate leaves it out")


def _agent_format(argv: list[str]) -> str:
    """The output format (the agent) the forwarding hook was installed with; Claude Code's
    when its arguments name none we know (its own decision then fails open)."""
    try:
        output_format = parse_args(argv).output_format
    except HookError:
        return DEFAULT_FORMAT
    return output_format if output_format in FORMATS else DEFAULT_FORMAT


def _stop_input(raw: bytes, agent: str) -> tuple[str | None, str | None]:
    """The session id and final text of ``agent``'s Stop input (None, None if it is not one;
    the final text is None if the agent does not send it)."""
    try:
        event = parse(raw, agent)
    except StopInputError:
        return None, None
    return event.session_id, event.final_text
