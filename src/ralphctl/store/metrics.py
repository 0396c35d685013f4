"""Read-only aggregate queries over the store's tables: what the dashboard and ``/metrics`` show.

Three are the seed's: total cost per loop, average iterations to completion, cost by hour;
``stats`` is its ``get_stats``. The others feed the Prometheus exposition (counts by status,
totals, the newest event seq).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, func, literal_column, select

from ralphctl.domain.states import LoopStatus
from ralphctl.store.repository import Store
from ralphctl.store.schema import events, iterations, loops


@dataclass(frozen=True, slots=True)
class LoopCost:
    loop_id: str
    name: str
    status: str
    iterations: int
    cost_usd: float


@dataclass(frozen=True, slots=True)
class Completion:
    """How many iterations completed loops took, on average (None when none completed)."""

    completed_loops: int
    average_iterations: float | None


@dataclass(frozen=True, slots=True)
class HourCost:
    hour: str  # the UTC hour, "2026-03-01T12:00:00Z"
    iterations: int
    cost_usd: float


@dataclass(frozen=True, slots=True)
class Totals:
    """Everything the store has seen, for Prometheus counters and gauges."""

    loops_by_status: dict[str, int]
    iterations_by_status: dict[str, int]
    cost_usd: float
    tokens: dict[str, int]  # input, output, cache_read, cache_write
    last_seq: int


@dataclass(frozen=True, slots=True)
class Tally:
    """A number of loops and what they spent: cost, recorded iterations, input+output tokens."""

    loops: int
    cost_usd: float
    iterations: int
    tokens: int


@dataclass(frozen=True, slots=True)
class Stats:
    """The loops active now (pending, running, paused, rate limited) and what they have spent
    so far; every loop the store holds, ended or not, and what they spent all told."""

    active: Tally
    active_by_status: dict[str, int]  # every active status, 0 when none is in it
    all_time: Tally


def stats(store: Store) -> Stats:
    """The seed's ``get_stats``, saying which totals are for active loops and which all-time."""
    per_status = select(
        loops.c.status,
        func.count(),
        func.coalesce(func.sum(loops.c.cost_usd), 0.0),
        func.coalesce(func.sum(loops.c.tokens_input + loops.c.tokens_output), 0),
    ).group_by(loops.c.status)
    iterations_per_status = (
        select(loops.c.status, func.count())
        .select_from(iterations.join(loops, iterations.c.loop_id == loops.c.id))
        .group_by(loops.c.status)
    )
    with _reading(store, "loop statistics") as conn:
        rows = conn.execute(per_status).all()
        iteration_counts: dict[str, int] = dict(conn.execute(iterations_per_status).all())
    tallies = {
        status: Tally(int(count), float(cost), iteration_counts.get(status, 0), int(tokens))
        for status, count, cost, tokens in rows
    }
    active = [status for status in LoopStatus if status.is_active]
    return Stats(
        active=_sum(tally for status, tally in tallies.items() if status in active),
        active_by_status={str(s): tallies[s].loops if s in tallies else 0 for s in active},
        all_time=_sum(tallies.values()),
    )


def _sum(tallies: Iterable[Tally]) -> Tally:
    total = Tally(0, 0.0, 0, 0)
    for tally in tallies:
        total = Tally(
            total.loops + tally.loops,
            total.cost_usd + tally.cost_usd,
            total.iterations + tally.iterations,
            total.tokens + tally.tokens,
        )
    return total


def cost_per_loop(store: Store, limit: int = 100) -> list[LoopCost]:
    """Each loop's cost summed over its iterations, most expensive first."""
    cost = func.coalesce(func.sum(iterations.c.cost_usd), 0.0).label("cost_usd")
    count = func.count(iterations.c.n).label("iterations")
    query = (
        select(loops.c.id, loops.c.name, loops.c.status, count, cost)
        .select_from(loops.outerjoin(iterations, iterations.c.loop_id == loops.c.id))
        .group_by(loops.c.id, loops.c.name, loops.c.status)
        .order_by(cost.desc(), loops.c.id)
        .limit(limit)
    )
    with _reading(store, "total cost per loop") as conn:
        return [
            LoopCost(row.id, row.name, row.status, row.iterations, float(row.cost_usd))
            for row in conn.execute(query)
        ]


def iterations_to_completion(store: Store) -> Completion:
    query = select(func.count(), func.avg(loops.c.iteration)).where(
        loops.c.status == str(LoopStatus.COMPLETED)
    )
    with _reading(store, "average iterations to completion") as conn:
        count, average = conn.execute(query).one()
    return Completion(count, None if average is None else float(average))


def cost_by_hour(store: Store, since: datetime) -> list[HourCost]:
    """Cost of the iterations started at or after ``since``, per UTC hour, oldest first."""
    with _reading(store, "cost by hour") as conn:
        hour = _utc_hour(conn, iterations.c.started_at).label("hour")
        query = (
            select(hour, func.count(), func.coalesce(func.sum(iterations.c.cost_usd), 0.0))
            .where(iterations.c.started_at >= since)
            .group_by(hour)
            .order_by(hour)
        )
        return [HourCost(h, n, float(cost)) for h, n, cost in conn.execute(query)]


def totals(store: Store) -> Totals:
    loop_counts = select(loops.c.status, func.count()).group_by(loops.c.status)
    iteration_counts = select(iterations.c.status, func.count()).group_by(iterations.c.status)
    sums = select(
        func.coalesce(func.sum(loops.c.cost_usd), 0.0),
        func.coalesce(func.sum(loops.c.tokens_input), 0),
        func.coalesce(func.sum(loops.c.tokens_output), 0),
        func.coalesce(func.sum(loops.c.tokens_cache_read), 0),
        func.coalesce(func.sum(loops.c.tokens_cache_write), 0),
    )
    with _reading(store, "totals") as conn:
        by_status: dict[str, int] = dict(conn.execute(loop_counts).all())
        by_iteration_status: dict[str, int] = dict(conn.execute(iteration_counts).all())
        cost, tokens_in, tokens_out, cache_read, cache_write = conn.execute(sums).one()
        seq = _last_seq(conn)
    return Totals(
        loops_by_status=by_status,
        iterations_by_status=by_iteration_status,
        cost_usd=float(cost),
        tokens={
            "input": int(tokens_in),
            "output": int(tokens_out),
            "cache_read": int(cache_read),
            "cache_write": int(cache_write),
        },
        last_seq=seq,
    )


def last_event_seq(store: Store) -> int:
    """The newest stored event's seq (0 when there is none): where a live stream starts."""
    with _reading(store, "the newest event") as conn:
        return _last_seq(conn)


def _last_seq(conn: Connection) -> int:
    return int(conn.execute(select(func.coalesce(func.max(events.c.seq), 0))).scalar_one())


def _utc_hour(conn: Connection, column: ColumnElement[Any]) -> ColumnElement[str]:
    """The UTC hour ``column`` falls in, as ISO 8601 text, on either backend."""
    # Constants are inlined: PostgreSQL matches the GROUP BY expression to the selected one
    # only when no bound parameter differs between them.
    if conn.dialect.name == "postgresql":
        utc = func.timezone(literal_column("'UTC'"), column)
        truncated = func.date_trunc(literal_column("'hour'"), utc)
        return func.to_char(truncated, literal_column('\'YYYY-MM-DD"T"HH24:00:00"Z"\''))
    return func.strftime(literal_column("'%Y-%m-%dT%H:00:00Z'"), column)  # naive UTC text


def _reading(store: Store, what: str) -> AbstractContextManager[Connection]:
    return store.transaction(f"read {what}")
