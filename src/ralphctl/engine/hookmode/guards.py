"""The circuit breaker of a hook-mode loop: every recorded iteration judged as a fresh loop
judges one, with the same ``domain`` code (``analyzer`` signals, ``breaker`` streaks: errors,
the same error, no progress, permission denials).

Progress is the work dir's git tree at each Stop against the one at the Stop before
(``engine.progress``). Taking a tree can outlast the time a Stop hook waits for the runner's
answer, so an iteration is judged once its Stop is answered, in order, and a trip ends the
loop at the next Stop (or when the session ends), one iteration later than in a fresh loop.
Outside a git work tree the tree cannot be taken: as in a fresh loop, an iteration then made
progress if it called, and was not refused, a tool its adapter marks as editing files (or
its status block says it modified files). A trip always ends the loop:
``auto_recover``'s cooldown and trial need a new run, which one session cannot give.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from ralphctl.domain.analyzer import analyse, breaker_outcome, edited_files
from ralphctl.domain.breaker import BreakerConfig, BreakerState, BreakerStatus, record
from ralphctl.domain.breaker import from_dict as breaker_from_dict
from ralphctl.domain.breaker import to_dict as breaker_to_dict
from ralphctl.domain.events import EventType
from ralphctl.domain.model import IterationResult
from ralphctl.engine.hookmode.history import History
from ralphctl.engine.progress import ProgressProbe


class HookBreaker:
    """Judges a hook-mode loop's iterations; ``tripped`` is the reason once it has tripped."""

    def __init__(self, history: History, config: BreakerConfig) -> None:
        self.history = history
        self.config = config
        self.state: BreakerState = breaker_from_dict(history.loop.breaker_state or {})
        self._probe = ProgressProbe(history.workdir)
        self._before: str | None = None
        self._turn = asyncio.Lock()  # one judgement at a time, in the order of the Stops
        self._pending: set[asyncio.Task[None]] = set()

    @property
    def tripped(self) -> str | None:
        return self.state.reason if self.state.status is BreakerStatus.OPEN else None

    async def start(self) -> None:
        """The tree as the session starts: the first iteration's progress is measured from it."""
        async with self._turn:
            self._before = await self._probe.before()

    def judge(self, n: int, result: IterationResult) -> None:
        """Judge iteration ``n`` (just recorded) in the background, after the earlier ones."""
        task = asyncio.get_running_loop().create_task(self._judge(n, result))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def settled(self) -> None:
        """Wait until every iteration recorded so far is judged."""
        while self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)

    def close(self) -> None:
        self._probe.close()

    async def _judge(self, n: int, result: IterationResult) -> None:
        async with self._turn:
            after = await self._probe.after()
            if after is None or self._before is None:  # no git: the tool calls tell
                changed = edited_files(result)
            else:
                changed = after != self._before
            self._before = await self._probe.before()
        was_open = self.state.status is BreakerStatus.OPEN
        outcome = breaker_outcome(n, result, analyse(result), files_changed=changed)
        self.state = record(self.state, outcome, self.config, time.time())
        # stored with the loop's next write (its next iteration, or its end)
        breaker = breaker_to_dict(self.state)
        self.history.loop = replace(self.history.loop, breaker_state=breaker)
        if self.state.status is BreakerStatus.OPEN and not was_open:
            data = {"iteration": n, "reason": self.state.reason, "cause": self.state.cause}
            self.history.publish(EventType.CIRCUIT_BREAKER_TRIPPED, data)
