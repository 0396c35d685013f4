"""Parameters several routes take, bounded to what the database's 64-bit integers hold."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

#: The largest signed 64-bit integer: the most an event seq or a stored count can be.
MAX_INT64 = 2**63 - 1

#: ``?since=SEQ``: only the events after this seq.
Since = Annotated[int, Query(ge=0, le=MAX_INT64, description="Only events after this seq.")]
