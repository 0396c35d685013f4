"""A receiver that takes 10 s to answer never slows a loop: deliveries run on their own
threads, with their own database connection."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ralphctl.domain.states import LoopStatus
from ralphctl.notify import outbox
from ralphctl.notify.config import Webhook
from ralphctl.store.repository import Store
from tests.engine.test_runner import DONE, new_loop, run
from tests.notify.conftest import deliverer
from tests.notify.receiver import receiver

EVERY_STEP = ("iteration_started", "iteration_completed", "completed")
STEPS: list[dict[str, Any]] = [
    *({"text": f"step {n}", "edits": [{"path": f"{n}.txt", "content": "x"}]} for n in range(5)),
    {"text": DONE},
]


def timed_loop(db: Store, workdir: Path) -> float:
    loop, config = new_loop(db, workdir, STEPS)
    started = time.perf_counter()
    final = run(db, loop, config)
    assert final.status is LoopStatus.COMPLETED
    return time.perf_counter() - started


def test_a_receiver_that_sleeps_10s_does_not_slow_the_loop(tmp_path: Path) -> None:
    with Store.open(str(tmp_path / "db.sqlite")) as db:
        (tmp_path / "warm").mkdir()
        timed_loop(db, tmp_path / "warm")  # imports and caches, for both runs alike
        (tmp_path / "alone").mkdir()
        alone = timed_loop(db, tmp_path / "alone")
        with receiver(10.0) as sleepy:
            hook = Webhook(sleepy.url, events=EVERY_STEP)
            worker = deliverer(db, hook).start()
            try:
                (tmp_path / "watched").mkdir()
                watched = timed_loop(db, tmp_path / "watched")
                busy = len(sleepy.received)
            finally:
                worker.stop()

        print(f"\nloop alone {alone:.2f}s, with a 10 s receiver {watched:.2f}s ({busy} in flight)")
        assert busy >= 1, "the receiver was never called while the loop ran"
        assert watched < alone * 1.5 + 0.5
        assert outbox.recent(db, status=outbox.DELIVERED) == []
