"""Every write of a run's hot path, in a module that imports no SQLAlchemy (a test checks that
these writes never import it)."""

from __future__ import annotations

from ralphctl.store.repository import Store
from tests.store.factories import T0, ended_loop, finished_iteration, started_iteration


def write_a_run(store: Store) -> None:
    """Every write of the hot path, as a run makes them."""
    loop = store.create_loop(ended_loop("loop-d"))
    store.begin_iteration(started_iteration("loop-d", 1), [("iteration_started", {"n": 1})])
    store.set_iteration_agent("loop-d", 1, 4321, T0)
    store.add_transcript_chunk(
        {"loop_id": "loop-d", "n": 1, "seq": 0, "data": b"\x00zz", "raw_bytes": 9, "created_at": T0}
    )
    done = finished_iteration("loop-d", 1)
    store.complete_iteration(done, loop, [("iteration_completed", {"ok": True, "note": "é"})])
    store.add_error("loop-d", 1, "agent", "it failed", {"exit_code": 3, "lines": ["a", None]})
    store.add_checkpoint("loop-d", 1, "abc123", {"files": 2})
    store.append_events("loop-d", [("one", {}), ("two", {"list": [1.5, None]})])
    store.save_loop(loop)
