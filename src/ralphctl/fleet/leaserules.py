"""The rules of a loop's lease, as pure functions of the lease and the database's clock.

A lease is free when nobody holds it, when it was released, or when it expired. Acquiring a
free lease makes a new generation (the previous one plus one); every earlier generation is
then fenced: it can neither renew the lease nor write a record. Renewing needs the holder's
name and its generation, not an unexpired lease: a lease that expired but was not taken over
is still the holder's, since nobody else wrote in between. ``leases`` applies these rules to
rows locked in PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a loop (``worker``, None once released), in which generation, until when."""

    loop_id: str
    worker: str | None
    generation: int
    acquired_at: datetime | None = None
    expires_at: datetime | None = None


def is_free(lease: Lease | None, now: datetime) -> bool:
    """Whether a worker may acquire ``lease`` (None: the loop was never held) at ``now``."""
    if lease is None or lease.worker is None or lease.expires_at is None:
        return True
    return lease.expires_at <= now


def acquired(
    lease: Lease | None, loop_id: str, worker: str, now: datetime, ttl: timedelta
) -> Lease | None:
    """The lease ``worker`` holds after acquiring ``lease`` at ``now``; None when it is taken."""
    _check_ttl(ttl)
    if not is_free(lease, now):
        return None
    generation = (lease.generation if lease is not None else 0) + 1
    return Lease(loop_id, worker, generation, acquired_at=now, expires_at=now + ttl)


def renewed(
    lease: Lease | None, worker: str, generation: int, now: datetime, ttl: timedelta
) -> Lease | None:
    """``lease`` extended to ``now + ttl`` for its holder; None when ``worker`` lost it."""
    _check_ttl(ttl)
    if lease is None or not held_by(lease, worker, generation):
        return None
    return replace(lease, expires_at=now + ttl)


def released(lease: Lease | None, worker: str, generation: int) -> Lease | None:
    """``lease`` given up by its holder, free at once; None when ``worker`` lost it already.
    The generation stays: the next acquisition makes the next one."""
    if lease is None or not held_by(lease, worker, generation):
        return None
    return replace(lease, worker=None, expires_at=None)


def holds(lease: Lease | None, generation: int) -> bool:
    """Whether ``generation`` is the lease's current, unreleased one: its holder may write."""
    return lease is not None and lease.worker is not None and lease.generation == generation


def held_by(lease: Lease, worker: str, generation: int) -> bool:
    """Whether ``worker`` holds ``lease`` in ``generation``, its current one."""
    return lease.worker == worker and holds(lease, generation)


def _check_ttl(ttl: timedelta) -> None:
    if ttl <= timedelta(0):
        raise ValueError(f"a lease's time to live must be positive, not {ttl}")
