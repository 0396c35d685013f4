"""A runner killed with SIGKILL loses no iteration whose complete_iteration had returned."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from ralphctl.store.repository import Store
from tests.store.factories import new_loop

ROOT = Path(__file__).parents[2]

#: Records iterations as fast as it can, printing each number once complete_iteration returned.
WRITER = textwrap.dedent(
    """
    import sys
    from ralphctl.store.repository import Store
    from tests.store.factories import finished_iteration, new_loop, started_iteration

    store = Store.open(sys.argv[1])
    for n in range(1, 100_000):
        store.begin_iteration(started_iteration("loop-crash", n))
        totals = new_loop("loop-crash", iteration=n)
        store.complete_iteration(finished_iteration("loop-crash", n), totals)
        print(n, flush=True)
    """
)


def test_a_killed_writer_loses_no_completed_iteration(store_url: str) -> None:
    with Store.open(store_url) as store:
        store.create_loop(new_loop("loop-crash"))
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, store_url], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    confirmed = [int(writer.stdout.readline()) for _ in range(20)]
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    confirmed += [int(line) for line in writer.stdout.read().split()]

    with Store.open(store_url) as store:
        done = [it.n for it in store.iterations("loop-crash") if it.status == "ok"]
        loop = store.get_loop("loop-crash")

    assert done[: len(confirmed)] == confirmed
    assert loop.iteration == done[-1]
