"""What an interrupted iteration's agent spent, read back from its stored transcript.

A runner killed right after its agent printed its closing record (Claude's ``result`` line,
with the cost) never recorded that cost. The transcript was written as the output arrived
(``engine/transcript_writer`` flushes on that record), so the cost is read back from it, with
the loop agent's own parser, and recorded ``cost_source = "recovered"``: money spent is never
missing from the ledger. When the record did not reach the transcript (the runner died before
reading it), the agent's own record of the session is read instead, where it keeps one
(Claude Code's session transcript: tokens only, priced with the loop's prices). Tokens without
a reported cost are priced as usual.

A hook-mode iteration is one part of a longer session, whose ``result`` line (if any) totals
every iteration of its process: its usage is what its own messages show, estimated as the
live hook-mode runner does (``engine/hookmode/usage``), else the responses the agent's session
record holds since the iteration began.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ralphctl.agents.base import ProcessOutcome
from ralphctl.agents.registry import session_tokens_reader
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.costs import DEFAULT_PRICES, Price, iteration_cost
from ralphctl.domain.model import IterationResult, TokenUsage
from ralphctl.engine.hookmode.usage import MeteredParser, Usage
from ralphctl.engine.transcript_reader import OversizedLine, parser_for, transcript_lines
from ralphctl.store.records import IterationRecord, LoopRecord, RecoveredUsage
from ralphctl.store.repository import Store
from ralphctl.store.transcript_chunks import iter_transcript

_NO_OUTCOME = ProcessOutcome(exit_code=None, duration_ms=0, stderr_tail="")


def recover_usage(
    store: Store, loop: LoopRecord, iteration: IterationRecord
) -> RecoveredUsage | None:
    """The usage of an iteration left running: from its transcript when the agent's closing
    record is there, else from what the agent kept of its session itself (priced); None when
    neither shows any."""
    if loop.mode == "hook":
        return _hook_iteration(store, loop, iteration)
    result = _from_transcript(store, loop, iteration.n)
    if result is None and iteration.agent_session_id is not None:
        result = _from_session(loop, iteration.agent_session_id)
    return _recovered(loop, iteration, result)


def _hook_iteration(
    store: Store, loop: LoopRecord, iteration: IterationRecord
) -> RecoveredUsage | None:
    """A hook-mode iteration's usage: its messages in its transcript, else in the session's
    record since it began."""
    metered = _metered(store, loop, iteration.n)
    if metered is not None:
        return RecoveredUsage(
            tokens_input=metered.tokens.input,
            tokens_output=metered.tokens.output,
            tokens_cache_read=metered.tokens.cache_read,
            tokens_cache_write=metered.tokens.cache_write,
            cost_usd=metered.cost_usd,
            agent_session_id=iteration.agent_session_id or loop.agent_session_id,
        )
    session_id = iteration.agent_session_id or loop.agent_session_id
    if session_id is None:
        return None
    result = _from_session(loop, session_id, since=iteration.started_at)
    return _recovered(loop, iteration, result)


def _recovered(
    loop: LoopRecord, iteration: IterationRecord, result: IterationResult | None
) -> RecoveredUsage | None:
    """``result``'s tokens and cost (priced where it reports none) as recovered usage."""
    if result is None:
        return None
    cost = iteration_cost(result, _prices(loop))
    return RecoveredUsage(
        tokens_input=result.tokens.input,
        tokens_output=result.tokens.output,
        tokens_cache_read=result.tokens.cache_read,
        tokens_cache_write=result.tokens.cache_write,
        cost_usd=cost.usd,
        agent_session_id=result.session_id or iteration.agent_session_id,
    )


def _from_transcript(store: Store, loop: LoopRecord, n: int) -> IterationResult | None:
    """What the agent's parser makes of the transcript, if it shows usage."""
    parser = parser_for(loop)
    for line in transcript_lines(iter_transcript(store, loop.id, n)):
        if not isinstance(line, OversizedLine):
            parser.feed(line)
    result = parser.finish(_NO_OUTCOME)
    shows_usage = result.cost_usd is not None or result.tokens != TokenUsage()
    return result if shows_usage else None


def _metered(store: Store, loop: LoopRecord, n: int) -> Usage | None:
    """Iteration ``n``'s messages in its transcript, metered; None if it shows none."""
    meter = MeteredParser(parser_for(loop), _prices(loop))
    for line in transcript_lines(iter_transcript(store, loop.id, n)):
        if not isinstance(line, OversizedLine):
            meter.feed(line)
    return meter.current() if meter.messages else None


def _from_session(
    loop: LoopRecord, session_id: str, since: datetime | None = None
) -> IterationResult | None:
    """The tokens the agent recorded of its session itself (since ``since``), if it keeps
    such a record."""
    read = session_tokens_reader(loop.agent)
    per_model = read(session_id, since) if read is not None else ()
    if not per_model:
        return None
    tokens = sum((entry.tokens for entry in per_model), TokenUsage())
    return IterationResult(tokens=tokens, model_tokens=per_model, session_id=session_id)


def _prices(loop: LoopRecord) -> Mapping[str, Price]:
    """The loop's price table; the shipped one if its stored config no longer validates."""
    try:
        return LoopConfig.from_mapping(loop.config).prices
    except (ValueError, TypeError):  # ConfigInvalid is a ValueError
        return DEFAULT_PRICES
