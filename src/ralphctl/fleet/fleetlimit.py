"""The fleet-wide limit: at most ``limit`` loops run at once, on all workers together.

A running loop holds one of ``limit`` slots, each a PostgreSQL session advisory lock (class
``SLOT_LOCKS``, slot 0 … limit - 1) on a connection of its own, taken with
``pg_try_advisory_lock``: of two workers reaching for the last slot, one gets it. A slot is
freed when its loop's job ends, and by the database itself when the worker's connection
drops (kill -9, power loss), so a dead worker never keeps one. A worker frozen (SIGSTOP)
keeps its connection and so its slot until it comes back: the fleet then runs fewer loops
than its limit, never more. Each worker is given the limit (``--fleet-limit``, the same on
every worker: the fleet runs at most the highest any of them has).
"""

from __future__ import annotations

from sqlalchemy import Connection, Engine, func, select

#: The advisory lock class of the fleet's slots ("slot" in ASCII).
SLOT_LOCKS = 0x736C6F74


class FleetSlot:
    """One slot held: its connection holds the lock until ``free``."""

    def __init__(self, conn: Connection, number: int) -> None:
        self.conn = conn
        self.number = number

    def free(self) -> None:
        """Unlock the slot and close its connection (a dropped connection frees it too)."""
        try:
            self.conn.execute(select(func.pg_advisory_unlock(SLOT_LOCKS, self.number)))
        finally:
            self.conn.close()


class FleetSlots:
    """The ``limit`` slots of the fleet on ``engine``'s database."""

    def __init__(self, engine: Engine, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a fleet runs at least one loop at a time, not {limit}")
        self.engine = engine
        self.limit = limit

    def take(self) -> FleetSlot | None:
        """A free slot, now held; None when every slot is held."""
        conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            for number in range(self.limit):
                locked = select(func.pg_try_advisory_lock(SLOT_LOCKS, number))
                if conn.execute(locked).scalar_one():
                    return FleetSlot(conn, number)
        except BaseException:
            conn.close()
            raise
        conn.close()
        return None
